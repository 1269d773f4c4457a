// kestrel-run's view of a task result (include/kestrel/tasks.h): printed, drawn on the
// image, and written as JSON.
#pragma once
#include <string>

#include "kestrel/image.h"
#include "kestrel/tasks.h"

namespace kt {

// Text with a dark backing box so that it reads on any image; above (x, y) when it
// fits there, so that it does not hide the box's contents.
void draw_label(kestrel::Image& img, int x, int y, const std::string& text, kestrel::Color color);

void print_task_result(const kestrel::TaskResult& r);
// Skeletons (keypoints with score >= min_score), boxes, landmarks and labels.
void draw_task_result(kestrel::Image& img, const kestrel::TaskResult& r, float min_score);
// {"task":..., "image":..., "latency_ms":..., "preprocess":{...}, "poses"|"faces"|"objects":[...]}
std::string task_result_json(const kestrel::TaskResult& r, const std::string& image, double latency_ms);

}  // namespace kt
