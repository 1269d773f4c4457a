// Static memory plan: one arena for all feature maps, laid out at Net load.
//
// Algorithm (greedy by size, as TFLite Micro's GreedyMemoryPlanner): each buffer
// lives from the step that produces it to the last step that reads it (inclusive).
// Buffers are placed largest first; each goes at the lowest offset where it overlaps
// no already placed buffer whose lifetime intersects its own. Offsets are multiples of
// kAlignment. The arena needs arena_bytes + kOverreadBytes.
//
// The lower bound is the largest total size of buffers live at one step: no layout
// of these lifetimes can use less, so arena_bytes / lower_bound_bytes measures the
// planner's waste.
#pragma once
#include <cstddef>
#include <vector>

namespace kestrel {

struct PlanBuffer {
  size_t bytes = 0;
  int first_step = 0;
  int last_step = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per buffer
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
};

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers);

}  // namespace kestrel
