#include "core/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "kestrel/mat.h"

namespace kestrel {

namespace {

bool lifetimes_overlap(const PlanBuffer& a, const PlanBuffer& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

size_t aligned(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

size_t lower_bound(const std::vector<PlanBuffer>& buffers) {
  // Sweep over step boundaries: +bytes at first_step, -bytes after last_step.
  std::map<int, long long> delta;
  for (const PlanBuffer& b : buffers) {
    delta[b.first_step] += static_cast<long long>(aligned(b.bytes));
    delta[b.last_step + 1] -= static_cast<long long>(aligned(b.bytes));
  }
  long long live = 0, best = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    best = std::max(best, live);
  }
  return static_cast<size_t>(best);
}

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers) {
  MemoryPlan plan;
  const size_t n = buffers.size();
  plan.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping buffers
  for (size_t i : order) {
    const size_t size = aligned(buffers[i].bytes);
    busy.clear();
    for (size_t j : placed) {
      if (lifetimes_overlap(buffers[i], buffers[j])) {
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + aligned(buffers[j].bytes));
      }
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [start, end] : busy) {
      if (start >= offset + size) break;  // the gap before this one fits
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    placed.push_back(i);
  }
  plan.lower_bound_bytes = lower_bound(buffers);
  return plan;
}

}  // namespace kestrel
