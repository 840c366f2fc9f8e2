// Mapping memory that is about to be filled in one system call instead of a fault per page.
//
// A table of a few hundred KiB that is filled right after it is allocated takes one page fault
// per 4 KiB page: on the 2-vCPU KVM guest this project is measured on, 0.70 µs a page, where
// madvise(MADV_POPULATE_WRITE) maps the same pages for 0.30-0.41 µs each (a C test of 32-512
// pages, 200 rounds; docs/PERFORMANCE.md). Only whole pages inside the range are asked for, so
// nothing outside it is touched; kernels before 5.14 refuse the advice, and the pages then fault
// in as before.
#pragma once

#include <cstddef>
#include <vector>

namespace cudatool {

// Maps the whole pages of [p, p + bytes) writable now. Below 16 pages it does nothing: the
// system call would cost what it saves.
void prefault_for_write(void* p, size_t bytes);

// The same for the capacity of `v` beyond its size: call it after reserve(), before filling.
template <class T>
void prefault_capacity(std::vector<T>& v) {
  prefault_for_write(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace cudatool
