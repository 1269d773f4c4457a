#include <climits>
#include <omp.h>

#include <algorithm>

#include "core/cpu_affinity.h"
#include "core/extractor_impl.h"
#include "core/guard.h"
#include "core/net_precision.h"

namespace kestrel {

namespace {

std::string shape_string(const Shape& s) {
  // Outermost first, as the model format and the converters write shapes.
  const int c = s.c * s.elempack;
  std::string r;
  if (s.dims >= 3) r += std::to_string(c) + ",";
  if (s.dims == 4) r += std::to_string(s.d) + ",";
  if (s.dims >= 2) r += std::to_string(s.h) + ",";
  return "[" + r + std::to_string(s.w) + "]";
}

}  // namespace

ExtractorImpl::ExtractorImpl(std::shared_ptr<const NetImpl> net, const Option& opt)
    : net_(std::move(net)), opt_(opt) {
  if (net_) size_for_net();
  // Last: memory_ is a raw pointer, which would leak if a vector above threw.
  memory_ = new ExtractorMemory(opt_.allocator ? opt_.allocator : default_allocator(),
                                opt_.memory == MemoryStrategy::kPool);
}

void ExtractorImpl::size_for_net() {
  const size_t nblobs = net_->blob_names.size();
  size_t max_arity = 1;
  for (const NetLayer& L : net_->layers) max_arity = std::max({max_arity, L.bottoms.size(), L.tops.size()});
  blobs_.resize(nblobs);
  charge_.assign(nblobs, 0);
  last_block_.assign(nblobs, nullptr);
  pending_.resize(nblobs);
  pending_charged_.assign(nblobs, 0);
  needed_.assign(net_->layers.size(), 0);
  remaining_.assign(nblobs, 0);
  rounded_inputs_.resize(nblobs);
  stack_.reserve(nblobs * 4 + 8);
  targets_.reserve(net_->outputs.size() + 1);
  bottoms_.reserve(max_arity);
  tops_.reserve(max_arity);
}

ExtractorImpl::~ExtractorImpl() {
  blobs_.clear();
  pending_.clear();
  bottoms_.clear();
  tops_.clear();
  arena_.release();
  workspace_.release();
  memory_->orphan();
}

Status ExtractorImpl::check_loaded() const {
  if (!net_) return Status(ErrorCode::kInvalidArgument, "the Net has no model loaded");
  return Status::Ok();
}

void ExtractorImpl::set_memory_strategy(MemoryStrategy s) {
  drop_computed();
  arena_.release();
  opt_.memory = s;
  memory_->set_pooling(s == MemoryStrategy::kPool);
  std::fill(last_block_.begin(), last_block_.end(), nullptr);
}

void ExtractorImpl::drop_blob(int b) {
  in_use_ -= charge_[b];
  charge_[b] = 0;
  blobs_[b].release();
}

void ExtractorImpl::drop_pending() {
  for (size_t c = 0; c < pending_.size(); ++c) {
    pending_[c].release();
    if (pending_charged_[c]) in_use_ -= net_->blob_shapes[c].bytes();
    pending_charged_[c] = 0;
  }
}

void ExtractorImpl::drop_computed() {
  for (size_t b = 0; b < blobs_.size(); ++b) {
    if (!net_->is_input[b]) drop_blob(static_cast<int>(b));
  }
  drop_pending();
}

Status ExtractorImpl::input(const std::string& name, const Mat& in) {
  Status s = check_loaded();
  if (!s.ok()) return s;
  const int b = net_->find_blob(name);
  if (b < 0 || !net_->is_input[b]) {
    std::string names;
    for (int i : net_->inputs) names += (names.empty() ? "'" : ", '") + net_->blob_names[i] + "'";
    return Status(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of this net (inputs: " + names + ")");
  }
  const Shape expected = net_->blob_shapes[b];
  if (in.data == nullptr || in.shape() != expected) {
    return Status(ErrorCode::kInvalidArgument, "input '" + name + "': expected shape " + shape_string(expected) +
                                                   ", got " + (in.data ? shape_string(in.shape()) : "an empty Mat"));
  }
  drop_computed();
  if (!net_->input_as_half[b]) {
    blobs_[b] = in;
    return Status::Ok();
  }
  // fp16 layers read this input as halves: a rounded copy, made once and refilled
  // while nothing else holds it.
  Mat& r = rounded_inputs_[b];
  if (r.data == nullptr || r.refcount_value() > 1) {
    r = Mat();
    if (!r.create(expected, opt_.allocator ? opt_.allocator : default_allocator())) {
      return Status(ErrorCode::kOutOfMemory, "input '" + name + "': cannot allocate " +
                                                 std::to_string(expected.bytes()) + " bytes for its fp16 copy");
    }
  }
  round_to_half(in, r, thread_count());
  blobs_[b] = r;
  return Status::Ok();
}

Status ExtractorImpl::mark_needed(const std::vector<int>& targets) {
  std::fill(needed_.begin(), needed_.end(), 0);
  std::fill(remaining_.begin(), remaining_.end(), 0);
  stack_.clear();
  for (int t : targets) {
    if (blobs_[t].data == nullptr) stack_.push_back(t);
  }
  while (!stack_.empty()) {
    const int b = stack_.back();
    stack_.pop_back();
    const int p = net_->producer[b];
    if (p < 0) {
      return Status(ErrorCode::kInvalidArgument, "input '" + net_->blob_names[b] + "' is not set");
    }
    if (needed_[p]) continue;
    needed_[p] = 1;
    for (int bottom : net_->layers[p].bottoms) {
      ++remaining_[bottom];
      if (blobs_[bottom].data == nullptr) stack_.push_back(bottom);
    }
  }
  // The layers that later extracts of the other declared outputs will run count as
  // consumers too: light mode keeps what they read (a multi-output net's trunk) instead
  // of freeing it and computing it again for the next output.
  for (int o : net_->outputs) {
    if (blobs_[o].data == nullptr && !is_target(o, targets)) stack_.push_back(o);
  }
  while (!stack_.empty()) {
    const int b = stack_.back();
    stack_.pop_back();
    const int p = net_->producer[b];
    if (p < 0 || needed_[p]) continue;
    needed_[p] = 2;  // not run now
    for (int bottom : net_->layers[p].bottoms) {
      ++remaining_[bottom];
      if (blobs_[bottom].data == nullptr) stack_.push_back(bottom);
    }
  }
  return Status::Ok();
}

bool ExtractorImpl::is_target(int b, const std::vector<int>& targets) const {
  return std::find(targets.begin(), targets.end(), b) != targets.end();
}

bool ExtractorImpl::runs_inplace(const NetLayer& L, const std::vector<int>& targets) const {
  if (!L.inplace) return false;
  // The plan gave the in-place pair one region; the pool and plain allocation may only
  // overwrite a map that nobody else (the user included) still holds.
  if (opt_.memory == MemoryStrategy::kPlan) return true;
  const int b = L.bottoms[0];
  return opt_.light_mode && blobs_[b].refcount_value() == 1 && remaining_[b] == 1 && !is_target(b, targets);
}

// A blob written into its Concat's output: a view of the output's channels, the output
// being allocated (and charged) now if this is the first of its inputs to be computed.
Status ExtractorImpl::allocate_aliased(int b, Mat* m) {
  const int c = net_->alias_of[b];
  if (!pending_charged_[c]) {
    pending_charged_[c] = 1;
    in_use_ += net_->blob_shapes[c].bytes();
  }
  if (pending_[c].data == nullptr) {
    Status s = allocate_blob(c, &pending_[c]);
    if (!s.ok()) return s;
  }
  Mat& whole = pending_[c];
  float* p = whole.data + net_->alias_offset[b] / sizeof(float);
  *m = Mat::view_of_shared(net_->blob_shapes[b], p, whole.base, whole.refcount, whole.allocator);
  return Status::Ok();
}

Status ExtractorImpl::allocate_blob(int b, Mat* m) {
  const Shape& shape = net_->blob_shapes[b];
  if (net_->alias_of[b] >= 0) return allocate_aliased(b, m);
  if (pending_[b].data != nullptr) {
    // A Concat whose inputs were written into this memory already.
    *m = std::move(pending_[b]);
    pending_[b].release();
    return Status::Ok();
  }
  if (opt_.memory == MemoryStrategy::kPlan) {
    float* p = arena_.data + net_->plan_offset[b] / sizeof(float);
    *m = Mat::view_of_shared(shape, p, arena_.base, arena_.refcount, arena_.allocator);
    return Status::Ok();
  }
  memory_->set_hint(last_block_[b]);
  if (!m->create(shape, memory_)) {
    return Status(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(shape.bytes()) +
                                               " bytes for blob '" + net_->blob_names[b] + "'");
  }
  last_block_[b] = m->base;
  return Status::Ok();
}

size_t ExtractorImpl::shared_workspace_bytes() const {
  return (net_->max_workspace_bytes + kAlignment - 1) / kAlignment * kAlignment;
}

size_t ExtractorImpl::thread_scratch_stride() const {
  return (net_->max_workspace_per_thread_bytes + kAlignment - 1) / kAlignment * kAlignment;
}

Status ExtractorImpl::ensure_scratch(int num_threads) {
  // One block: the layers' shared scratch, then one region per worker thread.
  const size_t need = shared_workspace_bytes() + thread_scratch_stride() * static_cast<size_t>(num_threads);
  if (need > 0 && (workspace_.data == nullptr || workspace_size_ < need)) {
    workspace_.release();
    workspace_size_ = 0;
    if (need / sizeof(float) + 1 > static_cast<size_t>(INT_MAX) ||
        !workspace_.create(Shape::make1(static_cast<int>(need / sizeof(float) + 1)), memory_)) {
      return Status(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(need) + " bytes of layer workspace");
    }
    workspace_size_ = need;
  }
  if (opt_.memory != MemoryStrategy::kPlan) return Status::Ok();
  // A user still holding an output of an earlier inference keeps that arena alive;
  // this inference then gets a fresh one rather than overwriting the user's data.
  if (arena_.data != nullptr && arena_.refcount_value() == 1) return Status::Ok();
  arena_.release();
  const size_t floats = net_->plan_arena_bytes / sizeof(float) + 1;
  if (!arena_.create(Shape::make1(static_cast<int>(floats)), memory_)) {
    return Status(ErrorCode::kOutOfMemory,
                  "cannot allocate the planned arena of " + std::to_string(net_->plan_arena_bytes) + " bytes");
  }
  return Status::Ok();
}

Status ExtractorImpl::run_layer(int li, const std::vector<int>& targets, int num_threads) {
  const NetLayer& L = net_->layers[li];
  const bool inplace = runs_inplace(L, targets);
  bottoms_.clear();
  tops_.clear();
  for (int b : L.bottoms) bottoms_.push_back(blobs_[b]);
  for (size_t i = 0; i < L.tops.size(); ++i) {
    Mat m;
    if (i == 0 && inplace) {
      m = blobs_[L.bottoms[0]];
      // A reshape in place (Layer::reshapes_only): the same memory under the top's shape.
      if (L.impl->reshapes_only()) m = m.reshape(net_->blob_shapes[L.tops[0]]);
    } else {
      Status s = allocate_blob(L.tops[i], &m);
      if (!s.ok()) {
        bottoms_.clear();
        tops_.clear();
        return s.with_context("layer '" + L.name + "'");
      }
      if (L.rows_follow_input) {
        // 2-D (checked at load): the rows are the whole tensor.
        m.h = bottoms_[0].h;
        m.cstep = static_cast<size_t>(m.w) * static_cast<size_t>(m.h);
      }
    }
    tops_.push_back(std::move(m));
  }
  ForwardContext ctx;
  ctx.num_threads = num_threads;
  ctx.workspace = workspace_.data;
  if (workspace_.data) {
    ctx.thread_scratch = reinterpret_cast<char*>(workspace_.data) + shared_workspace_bytes();
    ctx.thread_scratch_stride = thread_scratch_stride();
  }
  Status s = L.impl->forward(bottoms_, tops_, ctx);
  bottoms_.clear();
  if (s.ok() && L.round_outputs) {
    for (Mat& t : tops_) round_to_half(t, t, num_threads);
  }
  if (!s.ok()) {
    tops_.clear();
    return s.with_context("layer '" + L.name + "' (" + L.type + ")");
  }
  for (size_t i = 0; i < L.tops.size(); ++i) {
    const int t = L.tops[i];
    drop_blob(t);
    if (i == 0 && inplace) {
      // The output takes over the input's memory and its accounting.
      const int b = L.bottoms[0];
      charge_[t] = charge_[b];
      charge_[b] = 0;
      blobs_[b].release();
    } else if (net_->alias_of[t] >= 0) {
      charge_[t] = 0;  // its bytes are its Concat's, charged when first written
    } else {
      charge_[t] = net_->blob_shapes[t].bytes();
      in_use_ += charge_[t];
      if (pending_charged_[t]) {
        // Charged since its first input was written.
        in_use_ -= charge_[t];
        pending_charged_[t] = 0;
      }
    }
    blobs_[t] = std::move(tops_[i]);
  }
  tops_.clear();
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  if (light()) {
    for (int b : L.bottoms) {
      if (--remaining_[b] == 0 && !net_->is_input[b] && !is_target(b, targets)) drop_blob(b);
    }
    for (int t : L.tops) {
      if (remaining_[t] == 0 && !is_target(t, targets)) drop_blob(t);
    }
  }
  if (observer_) {
    LayerEvent ev;
    ev.layer_index = li;
    ev.layer_name = L.name.c_str();
    ev.layer_type = L.type.c_str();
    ev.in_use_bytes = in_use_;
    ev.held_bytes = memory_->counters().held;
    ev.multiply_adds = L.impl->multiply_adds;
    ev.kernel = L.impl->kernel_name ? L.impl->kernel_name : "";
    ev.precision = L.precision;
    observer_(ev);
  }
  return Status::Ok();
}

int ExtractorImpl::thread_count() const {
  const int all_threads = cpus_.empty() ? omp_get_max_threads() : cpus_.count();
  return opt_.num_threads > 0 ? opt_.num_threads : all_threads;
}

Status ExtractorImpl::run(const std::vector<int>& targets) {
  Status s = mark_needed(targets);
  if (!s.ok()) return s;
  const int threads = thread_count();
  if (!(s = ensure_scratch(threads)).ok()) return s;
  detail::ScopedPin pin;
  if (!cpus_.empty() && !(s = pin.pin(cpus_, threads)).ok()) return s;
  try {
    for (int li : net_->order) {
      if (needed_[li] != 1) continue;
      s = run_layer(li, targets, threads);
      if (!s.ok()) {
        // Leave a clean state: the next extract recomputes from the inputs.
        drop_computed();
        return s;
      }
    }
  } catch (...) {
    // Building an error message can throw std::bad_alloc (the public wrapper turns it
    // into a Status): leave the same clean state, with no half-built layer arguments.
    bottoms_.clear();
    tops_.clear();
    drop_computed();
    throw;
  }
  return Status::Ok();
}

// A planar fp32 copy of blob b's map: blocked or halves converted, an int8 map
// (core/net_int8.cpp) dequantized (q / scale).
Mat ExtractorImpl::fp32_copy(const Mat& m, int b) const {
  if (!m.i8) return convert_packing(m, 1, memory_);
  Shape s = m.shape();
  s.i8 = false;
  Mat f;
  if (!f.create(s, memory_)) return f;
  const float scale = net_->blob_int8_scale[b];
  const size_t plane = static_cast<size_t>(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < m.c; ++q) {
    const int8_t* src = reinterpret_cast<const int8_t*>(m.channel(q));
    float* dst = f.channel(q);
    for (size_t i = 0; i < plane; ++i) dst[i] = src[i] / scale;
  }
  return f;
}

Status ExtractorImpl::extract(const std::string& name, Mat& out) {
  out.release();
  Status s = check_loaded();
  if (!s.ok()) return s;
  const int b = net_->find_blob(name);
  if (b < 0) {
    std::string names;
    for (int i : net_->outputs) names += (names.empty() ? "'" : ", '") + net_->blob_names[i] + "'";
    return Status(ErrorCode::kInvalidArgument, "no blob named '" + name + "' (outputs: " + names + ")");
  }
  if (net_->producer[b] == NetImpl::kFusedAway) {
    return Status(ErrorCode::kInvalidArgument, "blob '" + name + "' is not stored: layer '" +
                                                   net_->layers[net_->fused_by[b]].name +
                                                   "' computes it in passing (load with Option::fuse_layers = false "
                                                   "to extract it)");
  }
  // A blob kept blocked between kernels (Option::blocked_layout) goes out planar, and
  // one kept as halves between fp16 layers (core/net_half.cpp) as fp32.
  auto hand_out = [&](const Mat& m) {
    if (m.elempack == 1 && !m.f16 && !m.i8) {
      out = m;
      return Status::Ok();
    }
    out = fp32_copy(m, b);
    if (out.data != nullptr) return Status::Ok();
    return Status(ErrorCode::kOutOfMemory, "cannot allocate the planar copy of blob '" + name + "'");
  };
  if (opt_.memory != MemoryStrategy::kPlan) {
    if (blobs_[b].data == nullptr) {
      targets_.assign(1, b);
      if (!(s = run(targets_)).ok()) return s;
    }
    return hand_out(blobs_[b]);
  }
  // Plan: regions are shared by blobs with disjoint lifetimes over the full execution
  // order, so each run starts from the inputs. Declared outputs live to the end and
  // are computed together; any other blob is handed out as a copy.
  if (blobs_[b].data != nullptr && net_->is_output[b]) {
    out = blobs_[b];
    return Status::Ok();
  }
  drop_computed();
  if (net_->is_output[b]) {
    targets_.assign(net_->outputs.begin(), net_->outputs.end());
  } else {
    targets_.assign(1, b);
  }
  if (!(s = run(targets_)).ok()) return s;
  if (net_->is_output[b]) {
    out = blobs_[b];
    return Status::Ok();
  }
  const Mat& m = blobs_[b];
  out = m.elempack == 1 && !m.f16 && !m.i8 ? m.clone(memory_) : fp32_copy(m, b);
  drop_computed();
  if (out.data == nullptr) {
    return Status(ErrorCode::kOutOfMemory, "cannot allocate a copy of blob '" + name + "'");
  }
  return Status::Ok();
}

Status ExtractorImpl::set_cpu_set(const CpuSet& cpus) {
  if (cpus.empty()) {
    cpus_ = cpus;
    return Status::Ok();
  }
  Status s = detail::check_cpu_set(cpus);
  if (s.ok()) cpus_ = cpus;
  return s;
}

MemoryStats ExtractorImpl::memory_stats() const {
  MemoryStats st;
  const ExtractorMemory::Counters c = memory_->counters();
  st.in_use_bytes = in_use_;
  st.peak_in_use_bytes = peak_in_use_;
  st.held_bytes = c.held;
  st.peak_held_bytes = c.peak_held;
  st.system_allocations = c.allocations;
  st.pool_hits = c.hits;
  if (net_) {
    st.planned_bytes = net_->plan_arena_bytes;
    st.lower_bound_bytes = net_->plan_lower_bound_bytes;
  }
  return st;
}

void ExtractorImpl::reset_memory_stats() {
  memory_->reset_counters();
  peak_in_use_ = in_use_;
}

// ---- public wrappers: no exception crosses the API --------------------------------

Extractor::Extractor(std::unique_ptr<ExtractorImpl> impl) : impl_(std::move(impl)) {}
Extractor::~Extractor() = default;
Extractor::Extractor(Extractor&&) noexcept = default;
Extractor& Extractor::operator=(Extractor&&) noexcept = default;

// impl_ is null only when create_extractor() itself ran out of memory.
static Status no_session() {
  return Status(ErrorCode::kOutOfMemory, "the Extractor could not be created (out of memory)");
}

void Extractor::set_light_mode(bool on) {
  if (impl_) impl_->set_light_mode(on);
}
void Extractor::set_num_threads(int n) {
  if (impl_) impl_->set_num_threads(n);
}
Status Extractor::set_cpu_set(const CpuSet& cpus) {
  if (!impl_) return no_session();
  return guarded("Extractor::set_cpu_set", [&] { return impl_->set_cpu_set(cpus); });
}
void Extractor::set_memory_strategy(MemoryStrategy s) {
  if (impl_) impl_->set_memory_strategy(s);
}

Status Extractor::input(const std::string& name, const Mat& in) {
  if (!impl_) return no_session();
  return guarded("Extractor::input", [&] { return impl_->input(name, in); });
}

Status Extractor::extract(const std::string& name, Mat& out) {
  out.release();
  if (!impl_) return no_session();
  return guarded("Extractor::extract", [&] { return impl_->extract(name, out); });
}

void Extractor::set_observer(std::function<void(const LayerEvent&)> observer) {
  if (impl_) impl_->set_observer(std::move(observer));
}

MemoryStats Extractor::memory_stats() const { return impl_ ? impl_->memory_stats() : MemoryStats{}; }
void Extractor::reset_memory_stats() {
  if (impl_) impl_->reset_memory_stats();
}

}  // namespace kestrel
