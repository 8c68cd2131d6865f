"""The model corpus of scripts/sweep-onnx, chosen by script rather than by hand.

`enumerate_corpus()` lists every case as a JSON-able spec `{name, group, kind, ...}`;
`build(spec)` constructs one (random init, no downloads) and returns `(model, inputs,
variant)`. Groups, in run order (cheapest first, so a time-boxed run covers the most):

- `pattern`: tests/interop/models/patterns.py (RNN, detection-head and selection patterns);
- `transformers`: encoders from tiny configs (BERT with a static and a dynamic sequence
  length, ViT, Wav2Vec2, Whisper's encoder);
- `torchvision`: video classifiers, segmentation models, RAFT optical flow;
- the packages users deploy to Ascend (scripts/sweep_packages.py): `ultralytics` (YOLO v8/11/26,
  every task), `hf_text` (Hugging Face text encoders and decoders, with attention masks and
  dynamic sequence lengths), `diffusers`, `smp` (segmentation-models-pytorch), `monai` (3-D),
  `open_clip`, `kornia`;
- `timm`: one model per timm family (the module defining it), the smallest by parameter
  count; `candidates` lists the next smallest too, tried in order when `torch.export`
  cannot export one with a dynamic batch (the sweep's worker picks the first that exports).
"""
import json
import sys
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "interop"))
sys.path.insert(0, str(ROOT / "tests" / "interop" / "models"))
from _coverage import Axis, Input  # noqa: E402
import patterns  # noqa: E402
import sweep_packages  # noqa: E402

TIMM_CANDIDATES = 3
HF_VOCAB = 100
SEQ = 16


# ------------------------------------------------------------------ timm
def timm_param_counts(cache_dir):
    """Parameter count of every timm model, built on the meta device (no memory, no
    weights). Takes minutes, so it is cached per timm version under `cache_dir`."""
    import timm

    cache = Path(cache_dir) / f"timm-{timm.__version__}-params.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    counts = {}
    for name in timm.list_models():
        try:
            with warnings.catch_warnings(), torch.device("meta"):
                warnings.simplefilter("ignore")
                model = timm.create_model(name, pretrained=False)
        except Exception:  # noqa: BLE001 - a model that cannot be built is not a candidate
            continue
        counts[name] = sum(p.numel() for p in model.parameters())
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(counts, indent=0, sort_keys=True))
    return counts


def timm_cases(cache_dir):
    """One case per timm module (family): its models sorted by parameter count."""
    from timm.models import _registry

    counts = timm_param_counts(cache_dir)
    families = {}
    for name, params in counts.items():
        families.setdefault(_registry._model_to_module[name], []).append((params, name))
    cases = []
    for family, models in families.items():
        ranked = [name for _, name in sorted(models)][:TIMM_CANDIDATES]
        cases.append({"name": f"timm/{family}", "group": "timm", "kind": "timm",
                      "candidates": ranked, "params": counts[ranked[0]]})
    return sorted(cases, key=lambda c: c["params"])


def build_timm(name):
    import timm

    model = timm.create_model(name, pretrained=False)
    size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
    return model, (Input("input", size),)


# ------------------------------------------------------------------ transformers
class FirstOutput(torch.nn.Module):
    """A Hugging Face model's first output (`last_hidden_state`), as a plain tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)[0]


def build_transformers(arch):
    import transformers as hf

    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64)
    if arch in ("bert", "bert_dynamic_seq"):
        config = hf.BertConfig(vocab_size=HF_VOCAB, max_position_embeddings=64, **small)
        model = hf.BertModel(config, add_pooling_layer=False)
        axes = (Axis(1, "seq", alt=11, max=64),) if arch == "bert_dynamic_seq" else ()
        return model, (Input("input_ids", (SEQ,), high=HF_VOCAB, axes=axes),)
    if arch == "vit":
        config = hf.ViTConfig(image_size=32, patch_size=8, **small)
        return hf.ViTModel(config, add_pooling_layer=False), (Input("pixel_values", (3, 32, 32)),)
    if arch == "wav2vec2":
        config = hf.Wav2Vec2Config(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                                   num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
                                   **small)
        return hf.Wav2Vec2Model(config), (Input("input_values", (800,)),)
    if arch == "whisper_encoder":
        config = hf.WhisperConfig(d_model=32, encoder_layers=2, encoder_attention_heads=2,
                                  encoder_ffn_dim=64, decoder_layers=1,
                                  decoder_attention_heads=2, decoder_ffn_dim=64,
                                  num_mel_bins=16, max_source_positions=30)
        encoder = hf.WhisperModel(config).get_encoder()
        return encoder, (Input("input_features", (16, 60)),)
    raise KeyError(arch)


TRANSFORMERS = ("bert", "bert_dynamic_seq", "vit", "wav2vec2", "whisper_encoder")


# ------------------------------------------------------------------ torchvision
class LastFlow(torch.nn.Module):
    """RAFT with a few refinement steps, returning the final flow only."""

    def __init__(self, raft, updates=3):
        super().__init__()
        self.raft, self.updates = raft, updates

    def forward(self, image1, image2):
        return self.raft(image1, image2, num_flow_updates=self.updates)[-1]


TORCHVISION = {
    # name: (module path, per-sample input shape)
    "r3d_18": ("video", (3, 8, 56, 56)),
    "mc3_18": ("video", (3, 8, 56, 56)),
    "r2plus1d_18": ("video", (3, 8, 56, 56)),
    "s3d": ("video", (3, 16, 224, 224)),
    "lraspp_mobilenet_v3_large": ("segmentation", (3, 128, 128)),
    "deeplabv3_mobilenet_v3_large": ("segmentation", (3, 128, 128)),
    "fcn_resnet50": ("segmentation", (3, 128, 128)),
    "deeplabv3_resnet50": ("segmentation", (3, 128, 128)),
    "raft_small": ("optical_flow", (3, 128, 128)),
    "mvit_v2_s": ("video", (3, 16, 224, 224)),
}


def build_torchvision(arch):
    import torchvision

    area, shape = TORCHVISION[arch]
    namespace = getattr(torchvision.models, area) if area != "classification" else \
        torchvision.models
    kwargs = {"weights": None}
    if area == "segmentation":
        kwargs["weights_backbone"] = None
    model = getattr(namespace, arch)(**kwargs)
    if area == "optical_flow":
        return LastFlow(model), (Input("image1", shape), Input("image2", shape))
    return model, (Input("input", shape),)


# ------------------------------------------------------------------ the corpus
def fixed_cases():
    """The corpus without timm's families (which need timm to enumerate)."""
    cases = [{"name": f"pattern/{n}", "group": "pattern", "kind": "pattern", "arch": n}
             for n in patterns.PATTERNS]
    cases += [{"name": f"transformers/{a}", "group": "transformers", "kind": "transformers",
               "arch": a} for a in TRANSFORMERS]
    cases += [{"name": f"torchvision/{a}", "group": "torchvision", "kind": "torchvision",
               "arch": a} for a in TORCHVISION]
    return cases + [{"name": f"{group}/{a}", "group": group, "kind": "package", "arch": a}
                    for group, (archs, _) in sweep_packages.PACKAGES.items() for a in archs]


def enumerate_corpus(cache_dir):
    return fixed_cases() + timm_cases(cache_dir)


def build(spec, variant=None):
    """`(model, inputs, variant)` for `spec`, in eval mode with non-trivial BatchNorm
    statistics; `variant` picks one of a timm family's candidates (default: the first)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kind = spec["kind"]
        if kind == "pattern":
            build_fn, inputs = patterns.PATTERNS[spec["arch"]]
            return build_fn(0), inputs, spec["arch"]
        if kind == "transformers":
            model, inputs = build_transformers(spec["arch"])
            variant = spec["arch"]
        elif kind == "torchvision":
            model, inputs = build_torchvision(spec["arch"])
            variant = spec["arch"]
        elif kind == "package":
            model, inputs = sweep_packages.PACKAGES[spec["group"]][1](spec["arch"])
            variant = spec["arch"]
        elif kind == "timm":
            variant = variant or spec["candidates"][0]
            model, inputs = build_timm(variant)
        else:
            raise KeyError(kind)
    model = patterns.randomise_bn(model, 0).eval()
    return FirstOutput(model) if kind == "transformers" else model, inputs, variant
