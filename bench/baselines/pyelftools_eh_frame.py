"""Baseline: the function map from .eh_frame with pyelftools (what a Python user would write):
every FDE's start and end, as `cudatool functions` lists them."""
import sys

from elftools.dwarf.callframe import FDE
from elftools.elf.elffile import ELFFile

with open(sys.argv[1], "rb") as f:
    elf = ELFFile(f)
    dwarf = elf.get_dwarf_info()
    n = 0
    for entry in dwarf.EH_CFI_entries():
        if isinstance(entry, FDE):
            start = entry.header["initial_location"]
            n += 1
            sys.stdout.write("%x %x\n" % (start, start + entry.header["address_range"]))
    sys.stderr.write("%d FDEs\n" % n)
