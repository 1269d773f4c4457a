#include "kestrel/net.h"

#include "core/extractor_impl.h"
#include "core/guard.h"
#include "core/net_impl.h"

namespace kestrel {

Net::Net() = default;
Net::~Net() = default;
Net::Net(Net&&) noexcept = default;
Net& Net::operator=(Net&&) noexcept = default;

void Net::set_input_shape(const std::string& name, const Shape& shape) {
  if (shape.dims == 0) {
    input_shapes_.erase(name);
  } else {
    input_shapes_[name] = shape;
  }
}

Status Net::load(const std::string& path) {
  return guarded("Net::load", [&]() -> Status {
    std::unique_ptr<NetImpl> impl;
    Status s = oom_names("Net::load: allocating the model's state", [&] {
      impl = std::make_unique<NetImpl>();
      return Status::Ok();
    });
    if (!s.ok()) return s;
    s = impl->buffer.map_file(path);
    if (!s.ok()) return s;
    std::shared_ptr<const NetImpl> built;
    s = build_net(std::move(impl), opt_, input_shapes_, &built);
    if (!s.ok()) return s.with_context("model '" + path + "'");
    impl_ = std::move(built);
    return Status::Ok();
  });
}

Status Net::load(const void* buffer, size_t size) {
  return guarded("Net::load", [&]() -> Status {
    std::unique_ptr<NetImpl> impl;
    Status s = oom_names("Net::load: allocating the model's state", [&] {
      impl = std::make_unique<NetImpl>();
      return Status::Ok();
    });
    if (!s.ok()) return s;
    s = impl->buffer.from_memory(buffer, size);
    if (!s.ok()) return s;
    std::shared_ptr<const NetImpl> built;
    s = build_net(std::move(impl), opt_, input_shapes_, &built);
    if (!s.ok()) return s.with_context("model buffer");
    impl_ = std::move(built);
    return Status::Ok();
  });
}

bool Net::empty() const { return impl_ == nullptr; }

std::vector<std::string> Net::input_names() const {
  std::vector<std::string> names;
  if (impl_) {
    for (int b : impl_->inputs) names.push_back(impl_->blob_names[b]);
  }
  return names;
}

std::vector<std::string> Net::output_names() const {
  std::vector<std::string> names;
  if (impl_) {
    for (int b : impl_->outputs) names.push_back(impl_->blob_names[b]);
  }
  return names;
}

Status Net::input_shape(const std::string& name, Shape* shape) const {
  if (!impl_) return Status(ErrorCode::kInvalidArgument, "net is not loaded");
  const int b = impl_->find_blob(name);
  if (b < 0 || !impl_->is_input[b]) {
    return Status(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of this net");
  }
  *shape = impl_->blob_shapes[b];
  return Status::Ok();
}

std::string Net::producer_type(const std::string& name) const {
  const int b = impl_ ? impl_->find_blob(name) : -1;
  if (b < 0) return std::string();
  const int layer = impl_->producer[b] == NetImpl::kFusedAway ? impl_->fused_by[b] : impl_->producer[b];
  return layer >= 0 ? impl_->layers[layer].type : std::string();
}

std::string Net::metadata(const std::string& key) const {
  if (!impl_) return std::string();
  auto it = impl_->metadata.find(key);
  return it == impl_->metadata.end() ? std::string() : it->second;
}

size_t Net::weight_bytes() const {
  return impl_ ? impl_->resident_weight_bytes : 0;
}
size_t Net::model_weight_bytes() const { return impl_ ? impl_->model_weight_bytes : 0; }
size_t Net::planned_bytes() const { return impl_ ? impl_->plan_arena_bytes : 0; }
size_t Net::lower_bound_bytes() const { return impl_ ? impl_->plan_lower_bound_bytes : 0; }

Extractor Net::create_extractor() const {
  try {
    return Extractor(std::make_unique<ExtractorImpl>(impl_, opt_));
  } catch (const std::bad_alloc&) {
    return Extractor(nullptr);
  }
}

}  // namespace kestrel
