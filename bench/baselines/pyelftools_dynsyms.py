"""Baseline: list dynamic symbols with pyelftools (what a Python user would write)."""
import sys

from elftools.elf.elffile import ELFFile

with open(sys.argv[1], "rb") as f:
    elf = ELFFile(f)
    n = 0
    for sym in elf.get_section_by_name(".dynsym").iter_symbols():
        if sym["st_shndx"] != "SHN_UNDEF":
            n += 1
            sys.stdout.write("%s %x %d %s\n" % (sym.name, sym["st_value"], sym["st_size"], sym["st_info"]["type"]))
