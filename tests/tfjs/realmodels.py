"""The real trained TF.js graph models Kestrel is checked on, and what each needs: the
file in @vladmandic/human@3.3.6's models/, its input (name, NHWC size, how a photo
becomes the tensor the model takes, as human's own src/ does it), and the metadata
kestrel-convert stores for the task API and kestrel-run. Shared by the TF.js
comparison (tests/tfjs/compare_tfjs.py), the demo and the speed table.
"""
import os
import pathlib
import subprocess

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]


class Model:
    def __init__(self, name, file, input_name, size, channels, photo, rand, meta):
        self.name, self.file, self.input_name = name, file, input_name
        self.size, self.channels = size, channels  # square NHWC input: 1 x size x size x channels
        self.photo = photo  # RGB float 0..255 HxWx3 resized -> the model's input values
        self.rand = rand  # (low, high) of the seeded random inputs
        self.meta = meta  # kestrel-convert --meta KEY=VALUE


def _gray(x):
    g = x[..., 0] * 0.2989 + x[..., 1] * 0.587 + x[..., 2] * 0.114
    return (g / 255.0 - 0.5)[..., None] * 2.0


# COCO's 80 classes in CenterNet's order (human's src/object/labels.ts), spaces as _.
COCO = ("person,bicycle,car,motorcycle,airplane,bus,train,truck,boat,traffic_light,fire_hydrant,stop_sign,"
        "parking_meter,bench,bird,cat,dog,horse,sheep,cow,elephant,bear,zebra,giraffe,backpack,umbrella,handbag,tie,"
        "suitcase,frisbee,skis,snowboard,sports_ball,kite,baseball_bat,baseball_glove,skateboard,surfboard,"
        "tennis_racket,bottle,wine_glass,cup,fork,knife,spoon,bowl,banana,apple,sandwich,orange,broccoli,carrot,"
        "hot_dog,pizza,donut,cake,chair,couch,potted_plant,bed,dining_table,toilet,tv,laptop,mouse,remote,keyboard,"
        "cell_phone,microwave,oven,toaster,sink,refrigerator,book,clock,vase,scissors,teddy_bear,hair_drier,"
        "toothbrush")

MODELS = [
    # MoveNet Lightning: int32 pixels; its own graph normalizes (folded into mean/norm).
    Model("movenet", "movenet-lightning.json", "input", 192, 3, lambda x: np.floor(x + 0.5), (0, 256),
          ["task=pose", "task.center=StatefulPartitionedCall/truediv_2",
           "task.heatmap=StatefulPartitionedCall/Sigmoid",
           "task.regress=StatefulPartitionedCall/kpt_regress_0/conv2d_6/BiasAdd",
           "task.offset=StatefulPartitionedCall/kpt_offset_0/conv2d_7/BiasAdd"]),
    # BlazeFace (MediaPipe short-range): x / 127.5 - 1.
    Model("blazeface", "blazeface.json", "input", 256, 3, lambda x: x / 127.5 - 1.0, (-1, 1),
          ["task=face", "task.scores=Identity,Identity_1", "task.boxes=Identity_2,Identity_3", "task.anchors=2,6",
           "mean=127.5", "norm=0.0078431373"]),
    # CenterNet MobileNetV3, 80 COCO classes: pixels 0..255 as floats.
    Model("centernet", "centernet.json", "tower_0/images", 512, 3, lambda x: x, (0, 255),
          ["task=objects", "task.heatmap=tower_0/keypoints", "task.wh=tower_0/wh", "labels=" + COCO]),
    # Emotion (grey 64x64): (grey / 255 - 0.5) * 2.
    Model("emotion", "emotion.json", "input_1", 64, 1, _gray, (-1, 1),
          ["task=classify", "channel_order=gray", "mean=127.5", "norm=0.0078431373",
           "labels=angry,disgust,fear,happy,sad,surprise,neutral"]),
    # FaceMesh (192x192 face crop): x / 255.
    Model("facemesh", "facemesh.json", "input_1", 192, 3, lambda x: x / 255.0, (0, 1), []),
]


def fetch():
    """Runs tools/realmodels.sh --print (fetching what is missing) -> its KEY=path dict."""
    out = subprocess.run([str(REPO / "tools" / "realmodels.sh"), "--print"], check=True, capture_output=True,
                         text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def photos(paths):
    """The six face-api sample photos, RGB float32 HxWx3."""
    import cv2
    demo = pathlib.Path(paths["FACEAPI_DEMO"])
    out = []
    for i in range(1, 7):
        bgr = cv2.imread(str(demo / f"sample{i}.jpg"), cv2.IMREAD_COLOR)
        if bgr is None:
            raise RuntimeError(f"cannot read {demo}/sample{i}.jpg")
        out.append((f"sample{i}", cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB).astype(np.float32)))
    return out


def model_input(model, rgb):
    """A photo as the model's NHWC input (bilinear resize to the square input)."""
    import cv2
    resized = cv2.resize(rgb, (model.size, model.size), interpolation=cv2.INTER_LINEAR)
    return model.photo(resized).astype(np.float32)[None]


def random_input(model, seed):
    rng = np.random.default_rng(seed)
    lo, hi = model.rand
    x = rng.uniform(lo, hi, (1, model.size, model.size, model.channels))
    return (np.floor(x) if model.name == "movenet" else x).astype(np.float32)


def node_env(paths):
    env = dict(os.environ)
    env["NODE_PATH"] = paths["TFJS_NODE_MODULES"]
    return env


if __name__ == "__main__":
    # tools/demo.sh: `realmodels.py convert-args NAME` prints the model's file name, then
    # one kestrel-convert argument a line (--meta, KEY=VALUE, ...).
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "convert-args":
        sys.exit("usage: realmodels.py convert-args NAME")
    model = next((m for m in MODELS if m.name == sys.argv[2]), None)
    if model is None:
        sys.exit(f"realmodels.py: no model '{sys.argv[2]}' (models: {', '.join(m.name for m in MODELS)})")
    print(model.file)
    for m in model.meta:
        print("--meta")
        print(m)
