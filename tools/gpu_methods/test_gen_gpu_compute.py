#!/usr/bin/python3
"""Tests of gen_gpu_compute.py on header snippets written here (not NVIDIA's files).

Run: python3 -m unittest discover -s tools/gpu_methods -p 'test_*.py'   (ctest runs it too)
"""

import os
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_gpu_compute as gen  # noqa: E402


def dedent(s):
    return textwrap.dedent(s).lstrip("\n")


class Parse(unittest.TestCase):
    def test_bit_ranges_values_and_indexed_forms(self):
        text = dedent('''
            #define NVX_QMDV04_00_GRID_WIDTH                    MW(1055:1024)
            #define NVX_QMDV04_00_RELEASE_ENABLE(i)             MW((320+(i)*16):(320+(i)*16))
            #define NVX_QMDV04_00_RELEASE_OP(i)                 MW((327+(i)*16):(325+(i)*16))
            #define NVX_QMDV04_00_QMD_TYPE_GRID_NULL            0x00000001
            #define NVX_SEND_PCAS_A                             0x02b4
            #define NVX_SEND_PCAS_A_QMD_ADDRESS_SHIFTED8          31:0
            #define NVX_LOAD_INLINE_QMD_DATA(i)              (0x0320+(i)*4)
            #define NVX_SET_OBJECT                              (0x0000) // a comment
            ''')
        self.assertEqual(gen.parse(text), {
            "NVX_QMDV04_00_GRID_WIDTH": ("range", 1055, 1024),
            "NVX_QMDV04_00_RELEASE_ENABLE": ("irange", (320, 16), (320, 16)),
            "NVX_QMDV04_00_RELEASE_OP": ("irange", (327, 16), (325, 16)),
            "NVX_QMDV04_00_QMD_TYPE_GRID_NULL": ("value", 1),
            "NVX_SEND_PCAS_A": ("value", 0x2b4),
            "NVX_SEND_PCAS_A_QMD_ADDRESS_SHIFTED8": ("range", 31, 0),
            "NVX_LOAD_INLINE_QMD_DATA": ("array", 0x320, 4),
            "NVX_SET_OBJECT": ("value", 0),
        })

    def test_emitted_c(self):
        self.assertEqual(gen.emit("A", ("value", 0x2b4)), ["#define RPG_A 0x2b4"])
        self.assertEqual(gen.emit("A", ("range", 7, 4)), ["#define RPG_A_HI 7", "#define RPG_A_LO 4"])
        self.assertEqual(gen.emit("A", ("irange", (327, 16), (325, 16))),
                         ["#define RPG_A_HI(i) (327 + (i) * 16)", "#define RPG_A_LO(i) (325 + (i) * 16)"])
        self.assertEqual(gen.emit("A", ("array", 0x320, 4)), ["#define RPG_A(i) (0x320 + (i) * 4)"])

    def test_qmd_size_from_the_highest_bit(self):
        facts = {"P_A": ("range", 3071, 3040), "P_B": ("range", 7, 0), "Q_C": ("range", 9999, 0)}
        self.assertEqual(gen.qmd_bytes(facts, "P_"), 384)


class Agreement(unittest.TestCase):
    def test_equal_defines_count_and_wider_ranges_are_listed(self):
        ours = {"H_A": ("value", 4), "H_B": ("range", 24, 0), "H_C": ("value", 9)}
        theirs = {"T_A": ("value", 4), "T_B": ("range", 16, 0)}
        widths = []
        self.assertEqual(gen.check_same(ours, theirs, ["A", "B", "C"], "H_", "T_", "t.h", widths), 1)
        self.assertEqual(widths, ["T_B 16:0 (t.h)"])

    def test_a_different_offset_stops_the_generator(self):
        with self.assertRaises(SystemExit):
            gen.check_same({"H_A": ("value", 4)}, {"T_A": ("value", 8)}, ["A"], "H_", "T_", "t.h", [])
        with self.assertRaises(SystemExit):  # a range that moved, not only widened
            gen.check_same({"H_B": ("range", 24, 1)}, {"T_B": ("range", 16, 0)}, ["B"], "H_", "T_",
                           "t.h", [])


if __name__ == "__main__":
    unittest.main()
