// kestrel-run's view of a task result (include/kestrel/tasks.h): printed, drawn on the
// image, and written as JSON.
#pragma once
#include <string>

#include "kestrel/image.h"
#include "kestrel/tasks.h"

namespace kt {

void print_task_result(const kestrel::TaskResult& r);
// Skeletons (keypoints with score >= min_score), boxes, landmarks and labels.
void draw_task_result(kestrel::Image& img, const kestrel::TaskResult& r, float min_score);
// {"task":..., "image":..., "latency_ms":..., "preprocess":{...}, "poses"|"faces"|"objects":[...]}
std::string task_result_json(const kestrel::TaskResult& r, const std::string& image, double latency_ms);

}  // namespace kt
