"""The corpus's models from the packages users deploy to Ascend (random init, no downloads).

Each builder returns `(model, inputs)` for one spec's `arch`, with sizes and options varied
rather than only each package's defaults:

- `ultralytics`: YOLO v8, 11 and 26 for detect, seg, pose, obb and cls, from the package's own
  model YAMLs, set up as its ONNX exporter sets them (fused, every head in export mode with the
  raw output and no NMS);
- `hf_text`: Hugging Face text encoders (DistilBERT, RoBERTa, ALBERT, ELECTRA, DeBERTa-v2, the
  T5 encoder, CLIP's text tower, BERT, XLM-R, MPNet, MobileBERT, SqueezeBERT, ConvBERT,
  ModernBERT, RoFormer, Funnel, ESM, ERNIE, BigBird, Longformer, XLNet) with and without an
  `attention_mask` input, and decoders without KV cache (GPT-2, LLaMA, Qwen2, Qwen3, Mistral,
  Phi, Phi-3, Gemma 1-3, OPT, BLOOM, GPT-NeoX, StableLM, StarCoder2, OLMo 1-2, Granite,
  Falcon, GPT-J, CodeGen, SmolLM3), from tiny configs;
- `hf_vision`: Hugging Face vision backbones (DINOv2, DINOv3, Swin, ConvNeXt, DeiT, BEiT,
  SegFormer, MobileViT, LeViT, PoolFormer, RegNet, ResNet, EfficientNet, BiT, DPT, GLPN,
  YOLOS, ViT-MAE, SigLIP, CLIP, FocalNet, PVTv2, MobileNet v1-v2, CvT, SwiftFormer, Hiera,
  ViTDet, I-JEPA, ViT-MSN, TextNet, SAM's image encoder), dense and detection heads (UperNet,
  Depth Anything, DETR, RT-DETR), video (VideoMAE, TimeSformer, ViViT) and speech encoders
  (HuBERT, WavLM, Data2Vec audio, the Audio Spectrogram Transformer, Wav2Vec2-Conformer, SEW,
  SEW-D, UniSpeech-SAT), from tiny configs;
- `diffusers`: UNet2DConditionModel (int64 per-sample timestep, text conditioning),
  UNet2DModel and AutoencoderKL's encoder and decoder;
- `smp`: segmentation-models-pytorch decoders over several encoders;
- `monai`: 3-D networks (UNet, BasicUNet, SegResNet, UNETR, SwinUNETR, DynUNet, AttentionUnet,
  VNet, 3-D DenseNet and ResNet);
- `open_clip`: image and text towers of small CLIP configs (ViT and modified ResNet);
- `kornia`: filters, colour conversions and enhancement modules;
- `hf_auto`: Hugging Face architectures built as a user picking a model type would, through
  `AutoConfig.for_model` and `AutoModel.from_config` (CamemBERT, Megatron-BERT, Nyströmformer,
  RemBERT, X-MOD, CANINE, LayoutLM, DeBERTa, Data2Vec text, LUKE, Mixtral and Qwen2-MoE,
  Persimmon, Cohere, Nemotron, MPT, GPT-BigCode, BioGPT, XGLM, Helium, EXAONE 4, BertGeneration,
  I-BERT, YOSO, MRA, FNet, Splinter; HGNet-v2 and other image backbones at other sizes).
"""
import os

import torch

from _coverage import Axis, Input

os.environ.setdefault("YOLO_OFFLINE", "1")
SEQ = 16
VOCAB = 100


def first_tensor(out):
    """A model's first output as a plain tensor (Hugging Face outputs, tuples)."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    return out[0] if isinstance(out, (tuple, list)) else out


class TextModel(torch.nn.Module):
    """A text model's first output from `input_ids` alone."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return first_tensor(self.model(input_ids=input_ids))


class MaskedTextModel(TextModel):
    """A text model's first output from `input_ids` and an `attention_mask` input."""

    def forward(self, input_ids, attention_mask):
        return first_tensor(self.model(input_ids=input_ids, attention_mask=attention_mask))


# ------------------------------------------------------------------ ultralytics
ULTRALYTICS = {}
for _gen, _stem in (("v8", "yolov8{s}"), ("11", "yolo11{s}"), ("26", "yolo26{s}")):
    for _task in ("detect", "seg", "pose", "obb", "cls"):
        suffix = "" if _task == "detect" else f"-{_task}"
        ULTRALYTICS[f"yolo{_gen}n{suffix}"] = (_stem.format(s="n") + suffix + ".yaml", 160)
ULTRALYTICS.update({
    "yolov8s": ("yolov8s.yaml", 224),
    "yolo11s-seg": ("yolo11s-seg.yaml", 192),
    "yolo26s-pose": ("yolo26s-pose.yaml", 256),
    "yolov8n-p2": ("yolov8-p2.yaml", 128),
    "yolo11n-cls-224": ("yolo11n-cls.yaml", 224),
})


def build_ultralytics(arch):
    from ultralytics import YOLO
    from ultralytics.nn.modules import Classify, Detect

    cfg, size = ULTRALYTICS[arch]
    model = YOLO(cfg, verbose=False).model.float().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    model = model.fuse(verbose=False)
    for m in model.modules():  # as ultralytics' Exporter sets the heads for ONNX
        if isinstance(m, Classify):
            m.export = True
        if isinstance(m, Detect):
            m.dynamic, m.export, m.format = True, True, "onnx"
    return model, (Input("images", (3, size, size)),)


# ------------------------------------------------------------------ Hugging Face text
HF_ENCODERS = ("distilbert", "roberta", "albert", "electra", "deberta_v2", "t5_encoder",
               "clip_text", "bert", "xlm_roberta", "mpnet", "mobilebert", "squeezebert",
               "convbert", "modernbert", "roformer", "funnel", "esm", "ernie", "big_bird",
               "longformer", "xlnet")
HF_DECODERS = ("gpt2", "llama", "qwen2", "mistral", "phi", "gemma", "gemma2", "gemma3_text",
               "phi3", "opt", "bloom", "gpt_neox", "stablelm", "starcoder2", "olmo", "olmo2",
               "granite", "falcon", "gptj", "codegen", "qwen3", "smollm3")
# A dynamic sequence length besides the batch (`Dim("seq", max=64)`): encoders with their
# `attention_mask`, decoders from their ids alone and with one.
HF_DYNAMIC_SEQ = ("distilbert_mask", "roberta_mask", "albert_mask", "electra_mask",
                  "t5_encoder_mask", "clip_text_mask", "gpt2", "llama", "qwen2", "gpt2_mask",
                  "llama_mask", "qwen2_mask")
HF_TEXT = tuple(f"{a}{m}" for a in HF_ENCODERS for m in ("", "_mask")) + HF_DECODERS + tuple(
    f"{a}_dynamic_seq" for a in HF_DYNAMIC_SEQ)


def hf_text_model(name):
    import transformers as hf

    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, vocab_size=VOCAB)
    enc = dict(max_position_embeddings=64, **small)
    dec = dict(max_position_embeddings=64, **small)
    if name == "distilbert":
        return hf.DistilBertModel(hf.DistilBertConfig(
            vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
            max_position_embeddings=64))
    if name == "roberta":
        return hf.RobertaModel(hf.RobertaConfig(**enc), add_pooling_layer=False)
    if name == "xlm_roberta":
        return hf.XLMRobertaModel(hf.XLMRobertaConfig(**enc), add_pooling_layer=False)
    if name == "albert":
        return hf.AlbertModel(hf.AlbertConfig(embedding_size=16, **enc), add_pooling_layer=False)
    if name == "electra":
        return hf.ElectraModel(hf.ElectraConfig(embedding_size=16, **enc))
    if name == "deberta_v2":
        return hf.DebertaV2Model(hf.DebertaV2Config(
            relative_attention=True, position_buckets=8, max_relative_positions=32,
            pos_att_type=["p2c", "c2p"], **enc))
    if name == "t5_encoder":
        return hf.T5EncoderModel(hf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64,
                                             num_layers=2, num_heads=2))
    if name == "clip_text":
        return hf.CLIPTextModel(hf.CLIPTextConfig(**enc))
    if name == "bert":
        return hf.BertModel(hf.BertConfig(**enc), add_pooling_layer=False)
    if name == "mpnet":
        return hf.MPNetModel(hf.MPNetConfig(**enc), add_pooling_layer=False)
    if name == "gpt2":
        return hf.GPT2Model(hf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2,
                                          n_positions=64))
    if name == "llama":
        return hf.LlamaModel(hf.LlamaConfig(num_key_value_heads=1, **dec))
    if name == "qwen2":
        return hf.Qwen2Model(hf.Qwen2Config(num_key_value_heads=1, **dec))
    if name == "mistral":
        return hf.MistralModel(hf.MistralConfig(num_key_value_heads=1, sliding_window=None,
                                                **dec))
    if name == "phi":
        return hf.PhiModel(hf.PhiConfig(**dec))
    return hf_text_model_more(name)


def hf_text_model_more(name):
    """Tiny configs of the text models added in the second batch."""
    import transformers as hf
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, vocab_size=VOCAB)
    enc = dict(max_position_embeddings=64, **small)
    dec = dict(max_position_embeddings=64, **small)
    if name == "mobilebert":
        return hf.MobileBertModel(hf.MobileBertConfig(embedding_size=16, intra_bottleneck_size=16,
                                                      num_feedforward_networks=2, **enc),
                                  add_pooling_layer=False)
    if name == "squeezebert":
        return hf.SqueezeBertModel(hf.SqueezeBertConfig(embedding_size=32, **enc))
    if name == "convbert":
        return hf.ConvBertModel(hf.ConvBertConfig(embedding_size=32, conv_kernel_size=3, **enc))
    if name == "modernbert":
        return hf.ModernBertModel(hf.ModernBertConfig(
            global_attn_every_n_layers=2, local_attention=8, pad_token_id=0,
            **{k: v for k, v in enc.items()}))
    if name == "roformer":
        return hf.RoFormerModel(hf.RoFormerConfig(embedding_size=32, **enc))
    if name == "funnel":
        return hf.FunnelBaseModel(hf.FunnelConfig(vocab_size=VOCAB, block_sizes=[1, 1], d_model=32,
                                                  n_head=2, d_head=16, d_inner=64))
    if name == "esm":
        return hf.EsmModel(hf.EsmConfig(position_embedding_type="rotary", pad_token_id=1,
                                        mask_token_id=2, **enc), add_pooling_layer=False)
    if name == "ernie":
        return hf.ErnieModel(hf.ErnieConfig(**enc), add_pooling_layer=False)
    if name == "big_bird":
        return hf.BigBirdModel(hf.BigBirdConfig(attention_type="original_full", **enc),
                               add_pooling_layer=False)
    if name == "longformer":
        return hf.LongformerModel(hf.LongformerConfig(attention_window=[4, 4], pad_token_id=1,
                                                      **enc), add_pooling_layer=False)
    if name == "xlnet":
        return hf.XLNetModel(hf.XLNetConfig(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=2,
                                            d_inner=64))
    if name == "gemma":
        return hf.GemmaModel(hf.GemmaConfig(num_key_value_heads=1, head_dim=16, **dec))
    if name == "gemma2":
        return hf.Gemma2Model(hf.Gemma2Config(num_key_value_heads=1, head_dim=16,
                                              sliding_window=8, **dec))
    if name == "gemma3_text":
        return hf.Gemma3TextModel(hf.Gemma3TextConfig(num_key_value_heads=1, head_dim=16,
                                                      sliding_window=8, **dec))
    if name == "phi3":
        return hf.Phi3Model(hf.Phi3Config(num_key_value_heads=1, pad_token_id=0, **dec))
    if name == "opt":
        return hf.OPTModel(hf.OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, ffn_dim=64, word_embed_proj_dim=32,
                                        max_position_embeddings=64))
    if name == "bloom":
        return hf.BloomModel(hf.BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=2))
    if name == "gpt_neox":
        return hf.GPTNeoXModel(hf.GPTNeoXConfig(**dec))
    if name == "stablelm":
        return hf.StableLmModel(hf.StableLmConfig(num_key_value_heads=1, **dec))
    if name == "starcoder2":
        return hf.Starcoder2Model(hf.Starcoder2Config(num_key_value_heads=1, **dec))
    if name == "olmo":
        return hf.OlmoModel(hf.OlmoConfig(num_key_value_heads=1, pad_token_id=0, **dec))
    if name == "olmo2":
        return hf.Olmo2Model(hf.Olmo2Config(num_key_value_heads=1, pad_token_id=0, **dec))
    if name == "granite":
        return hf.GraniteModel(hf.GraniteConfig(num_key_value_heads=1, **dec))
    if name == "falcon":
        return hf.FalconModel(hf.FalconConfig(vocab_size=VOCAB, hidden_size=32,
                                              num_hidden_layers=2, num_attention_heads=2))
    if name == "gptj":
        return hf.GPTJModel(hf.GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2,
                                          rotary_dim=8, n_positions=64))
    if name == "codegen":
        return hf.CodeGenModel(hf.CodeGenConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                                rotary_dim=4, n_positions=64, n_ctx=64))
    if name == "qwen3":
        return hf.Qwen3Model(hf.Qwen3Config(num_key_value_heads=1, head_dim=16, **dec))
    if name == "smollm3":
        return hf.SmolLM3Model(hf.SmolLM3Config(num_key_value_heads=1, pad_token_id=0, **dec))
    raise KeyError(name)


def build_hf_text(arch):
    dynamic = arch.endswith("_dynamic_seq")
    base = arch.removesuffix("_dynamic_seq")
    mask = base.endswith("_mask")
    name = base.removesuffix("_mask")
    model = hf_text_model(name)
    model.config.use_cache = False
    axes = (Axis(1, "seq", alt=11, max=64),) if dynamic else ()
    ids = Input("input_ids", (SEQ,), high=VOCAB, axes=axes)
    if mask:
        return MaskedTextModel(model), (ids, Input("attention_mask", (SEQ,), high=2, axes=axes))
    return TextModel(model), (ids,)


# ------------------------------------------------------------------ diffusers
DIFFUSERS = ("unet2d_condition", "unet2d_condition_wide", "unet2d", "vae_encoder",
             "vae_decoder")


class UNetCond(torch.nn.Module):
    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, sample, timestep, encoder_hidden_states):
        return self.unet(sample, timestep, encoder_hidden_states, return_dict=False)[0]


class UNetPlain(torch.nn.Module):
    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, sample, timestep):
        return self.unet(sample, timestep, return_dict=False)[0]


class VaePart(torch.nn.Module):
    def __init__(self, vae, part):
        super().__init__()
        self.vae, self.part = vae, part

    def forward(self, x):
        if self.part == "encode":
            return self.vae.encode(x).latent_dist.mean
        return self.vae.decode(x, return_dict=False)[0]


def build_diffusers(arch):
    model, inputs = _diffusers_model(arch)
    # diffusers' upsampling branches on `batch >= 64` (torch.export suggests `max=63`).
    model.export_batch_max = 63
    return model, inputs


def _diffusers_model(arch):
    import diffusers

    if arch.startswith("unet2d_condition"):
        wide = arch.endswith("_wide")
        unet = diffusers.UNet2DConditionModel(
            sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(32, 64) if not wide else (32, 64, 64),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D") if not wide else
            ("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D") if not wide else
            ("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8)
        return UNetCond(unet), (Input("sample", (4, 16, 16)), Input("timestep", (), high=1000),
                                Input("encoder_hidden_states", (8, 32)))
    if arch == "unet2d":
        unet = diffusers.UNet2DModel(sample_size=32, in_channels=3, out_channels=3,
                                     layers_per_block=1, block_out_channels=(32, 64),
                                     down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                     up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                                     norm_num_groups=8)
        return UNetPlain(unet), (Input("sample", (3, 32, 32)), Input("timestep", (), high=1000))
    vae = diffusers.AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4,
                                  block_out_channels=(32, 64),
                                  down_block_types=("DownEncoderBlock2D",) * 2,
                                  up_block_types=("UpDecoderBlock2D",) * 2,
                                  layers_per_block=1, norm_num_groups=8, sample_size=32)
    if arch == "vae_encoder":
        return VaePart(vae, "encode"), (Input("image", (3, 32, 32)),)
    return VaePart(vae, "decode"), (Input("latent", (4, 16, 16)),)


# ------------------------------------------------------------------ segmentation-models-pytorch
SMP = {
    "unet_resnet18": ("Unet", "resnet18", 64),
    "unet_mobilenet_v2": ("Unet", "mobilenet_v2", 96),
    "unetplusplus_resnet18": ("UnetPlusPlus", "resnet18", 64),
    "fpn_efficientnet-b0": ("FPN", "efficientnet-b0", 64),
    "fpn_resnet34": ("FPN", "resnet34", 128),
    "pspnet_resnet18": ("PSPNet", "resnet18", 96),
    "deeplabv3_resnet18": ("DeepLabV3", "resnet18", 64),
    "deeplabv3plus_mobilenet_v2": ("DeepLabV3Plus", "mobilenet_v2", 64),
    "linknet_resnet18": ("Linknet", "resnet18", 64),
    "manet_resnet18": ("MAnet", "resnet18", 64),
    "pan_resnet18": ("PAN", "resnet18", 128),
    "upernet_resnet18": ("UPerNet", "resnet18", 64),
    "segformer_mit_b0": ("Segformer", "mit_b0", 64),
    "unet_timm-regnetx_002": ("Unet", "timm-regnetx_002", 64),
}


def build_smp(arch):
    import segmentation_models_pytorch as smp

    cls, encoder, size = SMP[arch]
    model = getattr(smp, cls)(encoder_name=encoder, encoder_weights=None, in_channels=3,
                              classes=4)
    return model, (Input("image", (3, size, size)),)


# ------------------------------------------------------------------ MONAI (3-D)
MONAI = ("unet", "unet_residual", "basic_unet", "segresnet", "unetr", "swin_unetr",
         "dynunet", "attention_unet", "vnet", "densenet121_3d", "resnet10_3d")


def build_monai(arch):
    from monai import networks as mn

    nets = mn.nets
    shape = (1, 32, 32, 32)
    if arch in ("unet", "unet_residual"):
        model = nets.UNet(spatial_dims=3, in_channels=1, out_channels=2,
                          channels=(8, 16, 32), strides=(2, 2),
                          num_res_units=2 if arch == "unet_residual" else 0)
    elif arch == "basic_unet":
        model = nets.BasicUNet(spatial_dims=3, in_channels=1, out_channels=2,
                               features=(8, 8, 16, 32, 64, 8))
    elif arch == "segresnet":
        model = nets.SegResNet(spatial_dims=3, in_channels=1, out_channels=2, init_filters=8)
    elif arch == "unetr":
        model = nets.UNETR(in_channels=1, out_channels=2, img_size=32, feature_size=8,
                           hidden_size=96, mlp_dim=192, num_heads=4)
    elif arch == "swin_unetr":  # 32³ leaves its bottleneck 1³, which InstanceNorm refuses
        model = nets.SwinUNETR(in_channels=1, out_channels=2, feature_size=12,
                               spatial_dims=3)
        shape = (1, 64, 64, 64)
    elif arch == "dynunet":
        model = nets.DynUNet(spatial_dims=3, in_channels=1, out_channels=2,
                             kernel_size=(3, 3, 3), strides=(1, 2, 2),
                             upsample_kernel_size=(2, 2), filters=(8, 16, 32))
    elif arch == "attention_unet":
        model = nets.AttentionUnet(spatial_dims=3, in_channels=1, out_channels=2,
                                   channels=(8, 16, 32), strides=(2, 2))
    elif arch == "vnet":
        model = nets.VNet(spatial_dims=3, in_channels=1, out_channels=2)
    elif arch == "densenet121_3d":
        model = nets.DenseNet121(spatial_dims=3, in_channels=1, out_channels=3)
    elif arch == "resnet10_3d":
        model = nets.resnet10(spatial_dims=3, n_input_channels=1, num_classes=3)
    else:
        raise KeyError(arch)
    return model, (Input("volume", shape),)


# ------------------------------------------------------------------ open_clip
OPEN_CLIP = ("vit_image", "vit_text", "resnet_image", "vit_image_avg_pool")


def build_open_clip(arch):
    import open_clip

    text_cfg = dict(context_length=SEQ, vocab_size=VOCAB, width=32, heads=2, layers=2)
    if arch.startswith("vit"):
        vision_cfg = dict(image_size=32, patch_size=8, width=32, layers=2, head_width=16,
                          pool_type="avg" if arch.endswith("avg_pool") else "tok")
    else:
        vision_cfg = dict(image_size=64, layers=(1, 1, 1, 1), width=16, head_width=16)
    model = open_clip.CLIP(embed_dim=16, vision_cfg=vision_cfg, text_cfg=text_cfg).eval()
    if arch.endswith("_text"):
        return _Tower(model, "text"), (Input("text", (SEQ,), high=VOCAB),)
    size = vision_cfg["image_size"]
    return _Tower(model, "image"), (Input("image", (3, size, size)),)


class _Tower(torch.nn.Module):
    def __init__(self, clip, tower):
        super().__init__()
        self.clip, self.tower = clip, tower

    def forward(self, x):
        return self.clip.encode_text(x) if self.tower == "text" else self.clip.encode_image(x)


# ------------------------------------------------------------------ kornia
KORNIA = ("gaussian_blur", "box_blur", "sobel", "laplacian", "median_blur", "rgb_to_hsv",
          "rgb_to_grayscale", "adjust_brightness", "canny_magnitude", "unsharp_mask")


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def build_kornia(arch):
    import kornia

    f = kornia.filters
    modules = {
        "gaussian_blur": lambda: f.GaussianBlur2d((5, 5), (1.5, 1.5)),
        "box_blur": lambda: f.BoxBlur((3, 3)),
        "sobel": lambda: f.Sobel(),
        "laplacian": lambda: f.Laplacian(5),
        "median_blur": lambda: f.MedianBlur((3, 3)),
        "rgb_to_hsv": lambda: kornia.color.RgbToHsv(),
        "rgb_to_grayscale": lambda: kornia.color.RgbToGrayscale(),
        "adjust_brightness": lambda: _Fn(lambda x: kornia.enhance.adjust_brightness(x, 0.2)),
        "canny_magnitude": lambda: _Fn(lambda x: f.canny(x)[0]),
        "unsharp_mask": lambda: f.UnsharpMask((3, 3), (1.5, 1.5)),
    }
    model = modules[arch]()
    if arch == "rgb_to_hsv":
        model = _Positive(model)
    # torch.export guards kornia's filters on `batch < 4096/3` unless the Dim is bounded.
    model.export_batch_max = 1024
    return model, (Input("image", (3, 32, 32)),)


class _Positive(torch.nn.Module):
    """Colour conversions take images in [0, 1]: a sigmoid in front of the random input."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(torch.sigmoid(x))


# ------------------------------------------------------------------ the table
# ------------------------------------------------------------------ hf_vision
HF_VISION = ("dinov2", "dinov2_registers", "swin", "swinv2", "convnext", "convnextv2", "deit",
             "beit", "data2vec_vision", "segformer", "mobilevit", "mobilevitv2", "levit",
             "poolformer", "regnet", "resnet", "efficientnet", "bit", "dpt", "glpn",
             "yolos", "vit_mae", "siglip_vision", "clip_vision", "vit_pooled", "focalnet",
             "hubert", "wavlm", "audio_spectrogram", "data2vec_audio", "pvt_v2", "mobilenet_v2",
             "mobilenet_v1", "cvt", "swiftformer", "hiera", "vitdet", "upernet", "depth_anything",
             "sam_vision", "detr", "rt_detr", "ijepa", "vit_msn", "dinov3", "textnet", "videomae",
             "timesformer", "vivit", "wav2vec2_conformer", "sew", "sew_d", "unispeech_sat")


def hf_vision_model(name):
    """`(model, inputs)`: tiny configs of Hugging Face vision and audio backbones."""
    import transformers as hf

    vit = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, image_size=64, patch_size=8)
    image = (Input("pixel_values", (3, 64, 64)),)
    stages = dict(depths=[1, 1], hidden_sizes=[16, 32])
    if name in ("dinov2", "dinov2_registers"):
        config = (hf.Dinov2WithRegistersConfig(num_register_tokens=4, **vit)
                  if name == "dinov2_registers" else hf.Dinov2Config(**vit))
        model = (hf.Dinov2WithRegistersModel if name == "dinov2_registers"
                 else hf.Dinov2Model)(config)
        return model, image
    if name in ("swin", "swinv2"):
        cls, conf = ((hf.SwinModel, hf.SwinConfig) if name == "swin"
                     else (hf.Swinv2Model, hf.Swinv2Config))
        return cls(conf(image_size=64, patch_size=4, embed_dim=16, depths=[2, 2],
                        num_heads=[2, 4], window_size=4)), image
    if name == "convnext":
        return hf.ConvNextModel(hf.ConvNextConfig(**stages, num_stages=2)), image
    if name == "convnextv2":
        return hf.ConvNextV2Model(hf.ConvNextV2Config(**stages, num_stages=2)), image
    if name == "deit":
        return hf.DeiTModel(hf.DeiTConfig(**vit), add_pooling_layer=False), image
    if name == "beit":
        return hf.BeitModel(hf.BeitConfig(use_relative_position_bias=True, **vit)), image
    if name == "data2vec_vision":
        return hf.Data2VecVisionModel(hf.Data2VecVisionConfig(
            use_relative_position_bias=True, **vit)), image
    if name == "segformer":
        return hf.SegformerForSemanticSegmentation(hf.SegformerConfig(
            num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
            num_attention_heads=[1, 2], decoder_hidden_size=32, num_labels=3,
            patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])), image
    if name == "mobilevit":
        return hf.MobileViTModel(hf.MobileViTConfig(
            image_size=64, hidden_sizes=[32, 40, 48], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
            num_attention_heads=2)), image
    if name == "mobilevitv2":
        return hf.MobileViTV2Model(hf.MobileViTV2Config(image_size=64, width_multiplier=0.5)), image
    if name == "levit":
        return hf.LevitModel(hf.LevitConfig(
            image_size=64, hidden_sizes=[32, 48, 64], num_attention_heads=[1, 2, 2],
            depths=[1, 1, 1], key_dim=[8, 8, 8])), image
    if name == "poolformer":
        return hf.PoolFormerModel(hf.PoolFormerConfig(depths=[1, 1, 1, 1],
                                                      hidden_sizes=[8, 16, 24, 32])), image
    if name == "regnet":
        return hf.RegNetModel(hf.RegNetConfig(hidden_sizes=[16, 32, 48, 64],
                                              depths=[1, 1, 1, 1], groups_width=8)), image
    if name == "resnet":
        return hf.ResNetModel(hf.ResNetConfig(hidden_sizes=[16, 32, 48, 64],
                                              depths=[1, 1, 1, 1], embedding_size=16)), image
    if name == "efficientnet":
        return hf.EfficientNetModel(hf.EfficientNetConfig(image_size=64, width_coefficient=0.25,
                                                          depth_coefficient=0.25,
                                                          hidden_dim=320)), image
    if name == "bit":
        return hf.BitModel(hf.BitConfig(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1],
                                        embedding_size=16, num_groups=8)), image
    if name == "dpt":
        return hf.DPTForDepthEstimation(hf.DPTConfig(
            out_indices=[0, 1], neck_hidden_sizes=[16, 32], reassemble_factors=[4, 2],
            fusion_hidden_size=16, head_hidden_size=16, backbone_out_indices=[0, 1], **vit)), image
    if name == "glpn":
        return hf.GLPNForDepthEstimation(hf.GLPNConfig(
            num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
            num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2],
            decoder_hidden_size=16)), image
    if name == "yolos":
        return hf.YolosForObjectDetection(hf.YolosConfig(num_detection_tokens=10, **{**vit, "image_size": [64, 64]})), image
    if name == "vit_mae":
        return hf.ViTMAEModel(hf.ViTMAEConfig(mask_ratio=0.0, **vit)), image
    if name == "siglip_vision":
        return hf.SiglipVisionModel(hf.SiglipVisionConfig(**vit)), image
    if name == "clip_vision":
        return hf.CLIPVisionModel(hf.CLIPVisionConfig(**vit)), image
    if name == "vit_pooled":
        return hf.ViTModel(hf.ViTConfig(**vit), add_pooling_layer=True), image
    if name == "focalnet":
        return hf.FocalNetModel(hf.FocalNetConfig(image_size=64, embed_dim=16, depths=[1, 1],
                                                  focal_levels=[2, 2])), image
    audio = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                 conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                 num_conv_pos_embedding_groups=2)
    wave = (Input("input_values", (800,)),)
    if name == "hubert":
        return hf.HubertModel(hf.HubertConfig(**audio)), wave
    if name == "wavlm":
        return hf.WavLMModel(hf.WavLMConfig(num_buckets=16, max_bucket_distance=40, **audio)), wave
    if name == "data2vec_audio":
        return hf.Data2VecAudioModel(hf.Data2VecAudioConfig(**audio)), wave
    if name == "audio_spectrogram":
        return hf.ASTModel(hf.ASTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            patch_size=8, frequency_stride=8, time_stride=8, num_mel_bins=32,
            max_length=64)), (Input("input_values", (64, 32)),)
    return hf_vision_model_more(name)


def hf_vision_model_more(name):
    """`(model, inputs)`: tiny configs of the vision, video and audio models added in the second
    batch."""
    import transformers as hf
    vit = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, image_size=64, patch_size=8)
    image = (Input("pixel_values", (3, 64, 64)),)
    if name == "pvt_v2":
        return hf.PvtV2Model(hf.PvtV2Config(image_size=64, depths=[1, 1], hidden_sizes=[16, 32],
                                            num_encoder_blocks=2, sr_ratios=[2, 1],
                                            num_attention_heads=[1, 2], patch_sizes=[7, 3],
                                            strides=[4, 2], mlp_ratios=[2, 2])), image
    if name == "mobilenet_v2":
        return hf.MobileNetV2Model(hf.MobileNetV2Config(image_size=64, depth_multiplier=0.35)), image
    if name == "mobilenet_v1":
        return hf.MobileNetV1Model(hf.MobileNetV1Config(image_size=64, depth_multiplier=0.25)), image
    if name == "cvt":
        return hf.CvtModel(hf.CvtConfig(depth=[1, 2, 3], embed_dim=[16, 24, 32],
                                        num_heads=[1, 2, 2])), image
    if name == "swiftformer":
        return hf.SwiftFormerModel(hf.SwiftFormerConfig(depths=[1, 1, 1, 1],
                                                        embed_dims=[16, 16, 32, 32])), image
    if name == "hiera":
        return hf.HieraModel(hf.HieraConfig(image_size=[64, 64], embed_dim=16, depths=[1, 1, 1, 1],
                                            num_heads=[1, 2, 2, 4], patch_stride=[4, 4],
                                            query_stride=[2, 2], masked_unit_size=[8, 8])), image
    if name == "vitdet":
        return hf.VitDetModel(hf.VitDetConfig(hidden_size=32, num_hidden_layers=2,
                                              num_attention_heads=2, image_size=64,
                                              patch_size=8, pretrain_image_size=64,
                                              window_size=4, window_block_indices=[0],
                                              use_relative_position_embeddings=True)), image
    if name == "upernet":
        backbone = hf.ConvNextConfig(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 24, 32],
                                     out_features=["stage1", "stage2", "stage3", "stage4"])
        return hf.UperNetForSemanticSegmentation(hf.UperNetConfig(
            backbone_config=backbone, hidden_size=16, auxiliary_in_channels=24,
            auxiliary_channels=8, num_labels=3)), image
    if name == "depth_anything":
        backbone = hf.Dinov2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                                   intermediate_size=64, image_size=56, patch_size=14,
                                   out_indices=[1, 2, 3, 4], reshape_hidden_states=False)
        return hf.DepthAnythingForDepthEstimation(hf.DepthAnythingConfig(
            backbone_config=backbone, neck_hidden_sizes=[8, 16, 24, 32], fusion_hidden_size=16,
            head_hidden_size=8, reassemble_hidden_size=32, patch_size=14)), (Input("pixel_values", (3, 56, 56)),)
    if name == "sam_vision":
        return hf.SamVisionModel(hf.SamVisionConfig(hidden_size=32, output_channels=16,
                                                    num_hidden_layers=2, num_attention_heads=2,
                                                    image_size=64, patch_size=8, window_size=4,
                                                    global_attn_indexes=[1], mlp_dim=64)), image
    if name == "detr":
        backbone = hf.ResNetConfig(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1],
                                   embedding_size=16, out_features=["stage4"])
        return hf.DetrForObjectDetection(hf.DetrConfig(
            use_timm_backbone=False, backbone_config=backbone, d_model=32, encoder_layers=1,
            decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10, num_labels=3,
            use_pretrained_backbone=False)), image
    if name == "rt_detr":
        backbone = hf.RTDetrResNetConfig(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1],
                                         embedding_size=16, out_features=["stage2", "stage3", "stage4"])
        return hf.RTDetrForObjectDetection(hf.RTDetrConfig(
            backbone_config=backbone, encoder_hidden_dim=32, encoder_in_channels=[32, 48, 64],
            d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
            decoder_layers=1, encoder_layers=1, num_labels=3, num_feature_levels=3,
            decoder_in_channels=[32, 32, 32], anchor_image_size=None,
            encoder_attention_heads=2, decoder_attention_heads=2)), image
    if name == "ijepa":
        return hf.IJepaModel(hf.IJepaConfig(**vit)), image
    if name == "vit_msn":
        return hf.ViTMSNModel(hf.ViTMSNConfig(**vit)), image
    if name == "dinov3":
        return hf.DINOv3ViTModel(hf.DINOv3ViTConfig(hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=64,
                                                    image_size=64, patch_size=8,
                                                    num_register_tokens=2)), image
    if name == "textnet":
        return hf.TextNetModel(hf.TextNetConfig()), image
    video = (Input("pixel_values", (4, 3, 32, 32)),)
    if name == "videomae":
        return hf.VideoMAEModel(hf.VideoMAEConfig(image_size=32, patch_size=8, num_frames=4,
                                                  tubelet_size=2, hidden_size=32,
                                                  num_hidden_layers=2, num_attention_heads=2,
                                                  intermediate_size=64)), video
    if name == "timesformer":
        return hf.TimesformerModel(hf.TimesformerConfig(image_size=32, patch_size=8, num_frames=4,
                                                        hidden_size=32, num_hidden_layers=2,
                                                        num_attention_heads=2,
                                                        intermediate_size=64)), video
    if name == "vivit":
        return hf.VivitModel(hf.VivitConfig(image_size=32, num_frames=4, tubelet_size=[2, 8, 8],
                                            hidden_size=32, num_hidden_layers=2,
                                            num_attention_heads=2, intermediate_size=64),
                             add_pooling_layer=False), (Input("pixel_values", (4, 3, 32, 32)),)
    audio = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                 conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                 num_conv_pos_embedding_groups=2)
    wave = (Input("input_values", (800,)),)
    if name == "wav2vec2_conformer":
        return hf.Wav2Vec2ConformerModel(hf.Wav2Vec2ConformerConfig(
            position_embeddings_type="rotary", conv_depthwise_kernel_size=7, **audio)), wave
    if name == "sew":
        return hf.SEWModel(hf.SEWConfig(squeeze_factor=2, **audio)), wave
    if name == "sew_d":
        return hf.SEWDModel(hf.SEWDConfig(squeeze_factor=2, max_position_embeddings=64,
                                          position_buckets=16, **audio)), wave
    if name == "unispeech_sat":
        return hf.UniSpeechSatModel(hf.UniSpeechSatConfig(**audio)), wave
    raise KeyError(name)


class FirstTensor(torch.nn.Module):
    """A model's first output as a plain tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return first_tensor(self.model(x))


def build_hf_vision(arch):
    model, inputs = hf_vision_model(arch)
    return FirstTensor(model), inputs


# ------------------------------------------------------------------ hf_auto
# Architectures built generically, as a user picking a model type would: the package's own
# `AutoConfig.for_model(type, ...)` and `AutoModel.from_config`, from tiny sizes plus one row
# of overrides per type. Text models read `input_ids` (SEQ tokens); vision ones 64×64 images.
HF_AUTO_TEXT = {
    "camembert": {}, "megatron-bert": {}, "nystromformer": {},
    "rembert": dict(input_embedding_size=16, output_embedding_size=16),
    "xmod": dict(languages=["en_XX"], default_language="en_XX"),
    "canine": dict(downsampling_rate=2, num_hash_buckets=64, local_transformer_stride=4),
    "layoutlm": {},
    "deberta": dict(relative_attention=True, max_relative_positions=32,
                    pos_att_type=["p2c", "c2p"]),
    "data2vec-text": {}, "luke": dict(entity_vocab_size=10, entity_emb_size=16),
    "mixtral": dict(num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(num_key_value_heads=1, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, shared_expert_intermediate_size=32),
    "persimmon": {}, "cohere": dict(num_key_value_heads=1),
    "nemotron": dict(num_key_value_heads=1),
    "mpt": dict(d_model=32, n_heads=2, n_layers=2, max_seq_len=64),
    "gpt_bigcode": dict(n_embd=32, n_layer=2, n_head=2, n_positions=64),
    "biogpt": {}, "xglm": dict(d_model=32, num_layers=2, attention_heads=2, ffn_dim=64),
    "helium": dict(num_key_value_heads=1, head_dim=16), "exaone4": dict(num_key_value_heads=1),
    "bert-generation": {}, "ibert": {}, "yoso": {}, "mra": {}, "fnet": {}, "splinter": {},
}
HF_AUTO_VISION = {
    "hgnet_v2": dict(stem_channels=[3, 8, 16], stage_in_channels=[16, 32],
                     stage_mid_channels=[8, 16], stage_out_channels=[32, 64],
                     stage_num_blocks=[1, 1], stage_downsample=[False, True],
                     stage_light_block=[False, True], stage_kernel_size=[3, 5],
                     stage_numb_of_layers=[2, 2], hidden_sizes=[32, 64], depths=[1, 1],
                     out_features=["stage2"]),
    "convnext": {}, "convnextv2": dict(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1]),
    "swiftformer": {}, "levit": dict(image_size=64, hidden_sizes=[32, 48, 64],
                                     num_attention_heads=[1, 2, 2], depths=[1, 1, 1],
                                     key_dim=[8, 8, 8]),
    "vit": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, image_size=64, patch_size=8),
    "deit": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, image_size=64, patch_size=8, encoder_stride=8),
    "resnet": dict(embedding_size=16, hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1],
                   layer_type="basic"),
    "mobilenet_v1": dict(depth_multiplier=0.25, image_size=64),
}
HF_AUTO = tuple(HF_AUTO_TEXT) + tuple(f"{a}_image" for a in HF_AUTO_VISION)


def build_hf_auto(arch):
    import transformers as hf
    if arch.endswith("_image"):
        config = hf.AutoConfig.for_model(arch.removesuffix("_image"),
                                         **HF_AUTO_VISION[arch.removesuffix("_image")])
        model = hf.AutoModel.from_config(config)
        return FirstTensor(model), (Input("pixel_values", (3, 64, 64)),)
    config = hf.AutoConfig.for_model(arch, **{
        **dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64),
        **HF_AUTO_TEXT[arch]})
    config.use_cache = False
    return TextModel(hf.AutoModel.from_config(config)), (Input("input_ids", (SEQ,), high=VOCAB),)


PACKAGES = {
    "ultralytics": (tuple(ULTRALYTICS), build_ultralytics),
    "hf_text": (HF_TEXT, build_hf_text),
    "hf_vision": (HF_VISION, build_hf_vision),
    "diffusers": (DIFFUSERS, build_diffusers),
    "smp": (tuple(SMP), build_smp),
    "monai": (MONAI, build_monai),
    "open_clip": (OPEN_CLIP, build_open_clip),
    "kornia": (KORNIA, build_kornia),
    "hf_auto": (HF_AUTO, build_hf_auto),
}
