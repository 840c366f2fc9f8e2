// Applying a computed order to a vector in place.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cudatool {

// Rearranges `items` so that items[i] becomes the old items[from[i]], one cycle at a time: each
// item is copied once and no second vector of items is made. `from` must be a permutation of
// 0 … items.size() - 1 (or empty: nothing moves); its entries are overwritten.
template <class T>
void permute_in_place(std::vector<T>& items, std::span<uint32_t> from) {
  constexpr uint32_t kPlaced = UINT32_MAX;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == i || from[i] == kPlaced) continue;
    T held = items[i];  // the old items[i], until the cycle comes back to it
    size_t at = i;
    while (true) {
      size_t src = from[at];
      from[at] = kPlaced;
      if (src == i) {
        items[at] = held;
        break;
      }
      items[at] = items[src];
      at = src;
    }
  }
}

}  // namespace cudatool
