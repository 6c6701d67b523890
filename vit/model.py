"""A Vision Transformer (Dosovitskiy et al., 2021) whose blocks return their attention.

One file, one config dataclass, small modules. Equation numbers refer to the paper:

    z_0  = [x_class; x_p^1 E; ...; x_p^N E] + E_pos        (1)  patch + position embedding
    z'_l = MSA(LN(z_{l-1})) + z_{l-1}                       (2)  attention block, pre-norm
    z_l  = MLP(LN(z'_l)) + z'_l                              (3)  MLP block, pre-norm
    y    = LN(z_L^0)                                         (4)  final norm, read the CLS token

Options of later ViTs, each a config field: LayerScale (Touvron et al. 2021, "Going deeper
with Image Transformers", Sec. 3: z'_l = diag(γ1) MSA(LN(z_{l-1})) + z_{l-1}), DeiT's
distillation token (Touvron et al. 2021, "Training data-efficient image transformers"),
register tokens (Darcet et al. 2024, "Vision Transformers Need Registers"), position
embeddings without prefix slots, headless feature extractors (DINO, DINOv2), and 2-D rotary
position embeddings instead of learned ones (DINOv3, Siméoni et al. 2025: `vit.rope`).

CLIP's image tower (Radford et al. 2021, "Learning Transferable Visual Models From Natural
Language Supervision") adds three: a LayerNorm on the embedded tokens before the blocks
(`pre_norm`), QuickGELU in the MLPs of OpenAI's weights (x·σ(1.702x), Hendrycks & Gimpel 2016,
Sec. 2) and a linear projection without bias after the final norm of the CLS token into the
space shared with the text (`embed_dim`); its patch convolution has no bias (`patch_bias`).

The tensor layout and every default (LayerNorm eps 1e-6, exact GELU, packed q;k;v) match
torchvision's and timm's ViTs, so their weights load without any numeric change.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import config_from_dict, require
from .rope import Rope2d, rotate

Pool = Literal["cls", "gap"]
PosEmbed = Literal["learned", "rope"]
Activation = Literal["gelu", "quick_gelu"]


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = 224  # the (square) training resolution; position embeddings are laid out for it
    patch_size: int = 16
    in_channels: int = 3
    num_classes: int = 1000  # head: (B, D) -> (B, num_classes); 0: no head, forward returns the pooled (B, D)
    dim: int = 768
    depth: int = 12
    heads: int = 12
    mlp_dim: int = 3072
    pool: Pool = "cls"  # "cls": read the class token; "gap": mean of the patch tokens (paper, App. D.3)
    # Prefix tokens, in timm's order before the patches: CLS, distillation, registers.
    class_token: bool = True  # cls_token (1, 1, D)
    distill_token: bool = False  # DeiT's dist_token (1, 1, D), read by a second head, head_dist (D -> classes)
    register_tokens: int = 0  # reg_token (1, R, D): R extra tokens no head reads (Darcet et al. 2024)
    pos_embed_prefix: bool = True  # pos_embed (1, prefix + N, D); False: (1, N, D), patches only (timm no_embed_class)
    # "learned": z_0 + E_pos as in eq. (1); "rope": no E_pos, queries and keys of patch tokens are
    # rotated by their position in every attention layer (2-D RoPE as DINOv3, vit/rope.py)
    pos_embed: PosEmbed = "learned"
    rope_temperature: float = 100.0  # RoPE's T: periods T^{4k/d} of the rotation planes (DINOv3: 100)
    final_norm: bool = True
    fc_norm: bool = False  # the final LayerNorm on the pooled (B, D) instead of every token (timm's fc_norm)
    layer_scale: float | None = None  # LayerScale init value: gammas ls1, ls2 (D,) scale each residual branch
    qkv_bias: bool = True
    dropout: float = 0.0
    attn_dropout: float = 0.0
    drop_path: float = 0.0  # stochastic depth rate of the last block, linearly increasing from 0
    norm_eps: float = 1e-6
    # CLIP's image tower (open_clip's VisionTransformer; vit/clip.py converts its weights):
    pre_norm: bool = False  # norm_pre: LayerNorm on the embedded tokens before the blocks (CLIP's ln_pre)
    act: Activation = "gelu"  # "quick_gelu": x·σ(1.702x), the MLP activation OpenAI's CLIP was trained with
    patch_bias: bool = True  # CLIP's patch convolution has no bias
    embed_dim: int = 0  # > 0: a bias-free projection (D -> embed_dim) of the pooled token; forward returns it

    def __post_init__(self) -> None:
        what = "ViT config"
        for name in ("image_size", "patch_size", "in_channels", "dim", "depth", "heads", "mlp_dim"):
            require(getattr(self, name) >= 1, what, name, getattr(self, name), "expected a positive integer")
        for name in ("num_classes", "register_tokens", "embed_dim"):
            require(getattr(self, name) >= 0, what, name, getattr(self, name), "expected an integer >= 0")
        require(self.dim % self.heads == 0, what, "heads", self.heads, f"must divide dim {self.dim}")
        require(
            self.image_size % self.patch_size == 0,
            what,
            "image_size",
            self.image_size,
            f"expected a multiple of patch_size {self.patch_size}",
        )
        require(self.pool in ("cls", "gap"), what, "pool", self.pool, "expected 'cls' or 'gap'")
        require(self.class_token or self.pool == "gap", what, "pool", self.pool, "'cls' needs class_token=True")
        distilled_ok = not self.distill_token or (self.class_token and self.pool == "cls")
        require(distilled_ok, what, "distill_token", True, "needs class_token=True and pool='cls' (DeiT)")
        require(self.final_norm or not self.fc_norm, what, "fc_norm", True, "needs final_norm=True (it moves it)")
        ls = self.layer_scale
        require(ls is None or (ls > 0 and math.isfinite(ls)), what, "layer_scale", ls, "expected None or a number > 0")
        for name in ("dropout", "attn_dropout", "drop_path"):
            require(0.0 <= getattr(self, name) < 1.0, what, name, getattr(self, name), "expected a rate in [0, 1)")
        require(self.norm_eps > 0, what, "norm_eps", self.norm_eps, "expected a positive number")
        require(
            self.pos_embed in ("learned", "rope"), what, "pos_embed", self.pos_embed, "expected 'learned' or 'rope'"
        )
        if self.pos_embed == "rope":
            head_dim = self.dim // self.heads
            require(
                head_dim % 4 == 0, what, "heads", self.heads, f"2-D RoPE needs dim/heads divisible by 4, got {head_dim}"
            )
            require(
                not self.pos_embed_prefix, what, "pos_embed_prefix", True, "rotary embeddings have no position slots"
            )
        t = self.rope_temperature
        require(t > 1 and math.isfinite(t), what, "rope_temperature", t, "expected a number > 1")
        require(self.act in ("gelu", "quick_gelu"), what, "act", self.act, "expected 'gelu' or 'quick_gelu'")
        one_output = not (self.embed_dim and (self.num_classes or self.distill_token))
        require(one_output, what, "embed_dim", self.embed_dim, "a model with a classifier head has no projection")

    @property
    def prefix_names(self) -> tuple[str, ...]:
        """Names of the prefix tokens in sequence order: 'cls', 'dist', 'reg1', 'reg2', ..."""
        names = ("cls",) * self.class_token + ("dist",) * self.distill_token
        return names + tuple(f"reg{i + 1}" for i in range(self.register_tokens))

    @property
    def grid(self) -> tuple[int, int]:
        """Patch grid (gh, gw) the position embeddings were learned for."""
        side = self.image_size // self.patch_size
        return side, side

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ViTConfig:
        """Build a config from JSON with `config_from_dict`'s rule: unknown fields, wrong types
        and refused values all end in a ValueError naming the field."""
        return config_from_dict(cls, d, "ViT config")


class AttentionMaps(tuple):
    """The per-layer attention weights of one forward pass: a tuple of L tensors, each
    (B, heads, T, T) post-softmax, plus what is needed to read them: the patch `grid`
    (gh, gw) the tokens came from, the number of `prefix_tokens` before the row-major patch
    tokens (CLS, distillation and register tokens, in that order) and their `prefix_names`
    ('cls', 'dist', 'reg1', ...; by default 'cls' then 'prefix2', 'prefix3', ...)."""

    grid: tuple[int, int]
    prefix_tokens: int
    prefix_names: tuple[str, ...]

    def __new__(
        cls,
        layers: list[Tensor],
        grid: tuple[int, int],
        prefix_tokens: int,
        prefix_names: tuple[str, ...] | None = None,
    ) -> AttentionMaps:
        if prefix_names is None:
            prefix_names = tuple("cls" if i == 0 else f"prefix{i + 1}" for i in range(prefix_tokens))
        if len(prefix_names) != prefix_tokens:
            raise ValueError(f"{len(prefix_names)} prefix names {prefix_names} for {prefix_tokens} prefix tokens")
        maps = super().__new__(cls, layers)
        maps.grid = grid
        maps.prefix_tokens = prefix_tokens
        maps.prefix_names = tuple(prefix_names)
        return maps

    def apply(self, fn: Callable[[Tensor], Tensor]) -> AttentionMaps:
        """The same maps with `fn` applied to every layer (e.g. `.float().cpu()`), keeping the layout."""
        return AttentionMaps([fn(layer) for layer in self], self.grid, self.prefix_tokens, self.prefix_names)

    def __reduce__(self) -> tuple:
        # Pickled whole (a ZeroGPU worker sends them back across its fork): layers and layout.
        return AttentionMaps, (list(self), self.grid, self.prefix_tokens, self.prefix_names)


def resample_pos_embed(patch_pos: Tensor, old_grid: tuple[int, int], new_grid: tuple[int, int]) -> Tensor:
    """Resize patch position embeddings (1, gh*gw, D) from `old_grid` to `new_grid`.

    Bicubic with antialias and align_corners=False, as timm's `resample_abs_pos_embed`
    (torchvision's `interpolate_embeddings` uses align_corners=True instead). Prefix
    (CLS, ...) embeddings are never passed here: they have no position to interpolate.
    """
    if old_grid == new_grid:
        return patch_pos
    dim = patch_pos.shape[-1]
    grid = patch_pos.reshape(1, *old_grid, dim).permute(0, 3, 1, 2)  # (1, D, gh, gw)
    grid = F.interpolate(grid.float(), size=new_grid, mode="bicubic", antialias=True, align_corners=False)
    return grid.permute(0, 2, 3, 1).reshape(1, new_grid[0] * new_grid[1], dim).to(patch_pos.dtype)  # (1, N', D)


class PatchEmbed(nn.Module):
    """Split the image into P x P patches and project each to D dims: a stride-P convolution,
    which is the same linear map as "unfold, flatten (c, p, p), multiply by E" in eq. (1)."""

    def __init__(self, patch_size: int, in_channels: int, dim: int, bias: bool = True):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_channels, dim, kernel_size=patch_size, stride=patch_size, bias=bias)

    def grid(self, height: int, width: int) -> tuple[int, int]:
        p = self.patch_size
        if height % p or width % p:
            raise ValueError(f"image size {height}x{width} is not a multiple of the patch size {p}")
        return height // p, width // p

    def forward(self, images: Tensor) -> Tensor:
        x = self.proj(images)  # (B, D, gh, gw)
        return x.flatten(2).transpose(1, 2)  # (B, gh*gw, D), row-major over the grid


class Attention(nn.Module):
    """Multi-head self-attention (MSA in eq. 2) with packed q;k;v like torchvision and timm.

    With `need_weights=True` it also returns the post-softmax weights per head, (B, H, T, T):
    what `nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)` returns."""

    def __init__(self, dim: int, heads: int, qkv_bias: bool, attn_dropout: float, dropout: float, prefix: int = 0):
        super().__init__()
        self.heads = heads
        self.prefix = prefix  # tokens before the patches: no position, never rotated
        self.head_dim = dim // heads
        self.scale = self.head_dim**-0.5
        self.attn_dropout = attn_dropout
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, need_weights: bool = False, rope: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, T, D) -> (output (B, T, D), weights (B, H, T, T) or None). `rope`: (cos, sin),
        each (N, hd), that rotate the patch tokens' queries and keys (vit/rope.py)."""
        B, T, D = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, self.head_dim)  # (B, T, 3, H, hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, H, T, hd)
        if rope is not None:  # RoFormer eq. (34) on the patches; CLS and registers stay as they are
            p = self.prefix
            q = torch.cat([q[:, :, :p], rotate(q[:, :, p:], *rope)], dim=2)  # (B, H, T, hd)
            k = torch.cat([k[:, :, :p], rotate(k[:, :, p:], *rope)], dim=2)
        dropout_p = self.attn_dropout if self.training else 0.0
        if need_weights:
            # The explicit path: softmax(q k^T / sqrt(d)) is materialised so it can be returned.
            attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)  # (B, H, T, T)
            out = F.dropout(attn, dropout_p, self.training) @ v  # (B, H, T, hd)
        else:
            # The fast path: fused kernels (flash / memory-efficient on GPU), no map is built.
            attn = None
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)  # (B, H, T, hd)
        out = out.transpose(1, 2).reshape(B, T, D)  # concatenate the heads
        return self.proj_drop(self.proj(out)), attn


class QuickGELU(nn.Module):
    """x·σ(1.702x): the sigmoid approximation of GELU (Hendrycks & Gimpel 2016, Sec. 2) that
    OpenAI's CLIP was trained with, so its weights need it, not the exact GELU."""

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.sigmoid(1.702 * x)


class MLP(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, dropout: float, act: Activation = "gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        # exact erf GELU by default: the tanh approximation moves logits by ~6e-4
        self.act = QuickGELU() if act == "quick_gelu" else nn.GELU()
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class DropPath(nn.Module):
    """Stochastic depth (Huang et al., 2016): drop a sample's whole residual branch."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = x.new_empty(x.shape[0], *([1] * (x.ndim - 1))).bernoulli_(1.0 - self.p)
        return x * keep / (1.0 - self.p)


class LayerScale(nn.Module):
    """Per-channel scale of a residual branch, diag(γ) (Touvron et al. 2021, CaiT, Sec. 3); timm's
    `ls1`/`ls2` with their `gamma` (D,)."""

    def __init__(self, dim: int, init_value: float):
        super().__init__()
        self.init_value = init_value
        self.gamma = nn.Parameter(torch.full((dim,), init_value))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma  # (B, T, D) * (D,)


class Block(nn.Module):
    """One pre-norm encoder layer: eqs. (2) and (3), with LayerScale when configured."""

    def __init__(self, config: ViTConfig, drop_path: float):
        super().__init__()
        c = config
        self.norm1 = nn.LayerNorm(c.dim, eps=c.norm_eps)
        self.attn = Attention(c.dim, c.heads, c.qkv_bias, c.attn_dropout, c.dropout, len(c.prefix_names))
        self.ls1 = nn.Identity() if c.layer_scale is None else LayerScale(c.dim, c.layer_scale)
        self.norm2 = nn.LayerNorm(c.dim, eps=c.norm_eps)
        self.mlp = MLP(c.dim, c.mlp_dim, c.dropout, c.act)
        self.ls2 = nn.Identity() if c.layer_scale is None else LayerScale(c.dim, c.layer_scale)
        self.drop_path = DropPath(drop_path)

    def forward(
        self, x: Tensor, need_weights: bool = False, rope: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, T, D) -> (x', attention weights (B, H, T, T) if `need_weights` else None);
        `rope`: the rotary (cos, sin) of a model with pos_embed='rope' (VisionTransformer.rotary)."""
        y, attn = self.attn(self.norm1(x), need_weights, rope)
        x = x + self.drop_path(self.ls1(y))
        x = x + self.drop_path(self.ls2(self.mlp(self.norm2(x))))
        return x, attn


class VisionTransformer(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        c = self.config = config
        self.patch_embed = PatchEmbed(c.patch_size, c.in_channels, c.dim, c.patch_bias)
        self.prefix_tokens = len(c.prefix_names)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.dim)) if c.class_token else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, c.dim)) if c.distill_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, c.register_tokens, c.dim)) if c.register_tokens else None
        gh, gw = c.grid
        self.pos_slots = self.prefix_tokens if c.pos_embed_prefix else 0  # prefix tokens with a position embedding
        learned = c.pos_embed == "learned"
        self.pos_embed = nn.Parameter(torch.empty(1, self.pos_slots + gh * gw, c.dim)) if learned else None
        self.rope = None if learned else Rope2d(c.dim // c.heads, c.rope_temperature)
        self.pos_drop = nn.Dropout(c.dropout)
        self.norm_pre = nn.LayerNorm(c.dim, eps=c.norm_eps) if c.pre_norm else nn.Identity()
        rates = [c.drop_path * i / max(c.depth - 1, 1) for i in range(c.depth)]
        self.blocks = nn.ModuleList(Block(c, rate) for rate in rates)
        self.norm = nn.LayerNorm(c.dim, eps=c.norm_eps) if c.final_norm and not c.fc_norm else nn.Identity()
        self.fc_norm = nn.LayerNorm(c.dim, eps=c.norm_eps) if c.fc_norm else nn.Identity()
        self.head = self._new_head()
        self.head_dist = self._new_head() if c.distill_token else None
        self.proj = nn.Linear(c.dim, c.embed_dim, bias=False) if c.embed_dim else nn.Identity()
        self.reset_parameters()

    def _new_head(self) -> nn.Module:
        c = self.config
        return nn.Linear(c.dim, c.num_classes) if c.num_classes else nn.Identity()

    def reset_parameters(self) -> None:
        """timm's initialisation: truncated normal(0.02) for weights and position embeddings."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, LayerScale):
                nn.init.constant_(m.gamma, m.init_value)
        # The patch projection is a linear map on flattened patches: LeCun-normal like fan-in Linear.
        w = self.patch_embed.proj.weight
        nn.init.trunc_normal_(w, std=math.sqrt(1.0 / w[0].numel()))
        if self.patch_embed.proj.bias is not None:
            nn.init.zeros_(self.patch_embed.proj.bias)
        if self.pos_embed is not None:
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
        for token in (self.cls_token, self.reg_token):
            if token is not None:
                nn.init.normal_(token, std=1e-6)
        if self.dist_token is not None:
            nn.init.trunc_normal_(self.dist_token, std=0.02)

    def patch_grid(self, height: int, width: int) -> tuple[int, int]:
        """The (gh, gw) patch grid an image of height x width pixels is cut into."""
        return self.patch_embed.grid(height, width)

    def position_embedding(self, grid: tuple[int, int]) -> Tensor:
        """(1, pos_slots + gh*gw, D) position embeddings for `grid`, resampled if it is not the
        training grid. Prefix slots are kept as they are: they have no spatial position."""
        if self.pos_embed is None:
            raise ValueError("this model has rotary position embeddings (pos_embed='rope'): nothing is added")
        prefix, patches = self.pos_embed[:, : self.pos_slots], self.pos_embed[:, self.pos_slots :]
        return torch.cat([prefix, resample_pos_embed(patches, self.config.grid, grid)], dim=1)

    def embed(self, images: Tensor) -> tuple[Tensor, tuple[int, int]]:
        """Eq. (1): images (B, C, H, W) -> tokens (B, prefix + gh*gw, D) and the grid (gh, gw)."""
        channels = self.config.in_channels
        if images.ndim != 4 or images.shape[1] != channels:
            raise ValueError(f"expected images (B, {channels}, H, W), got shape {tuple(images.shape)}")
        grid = self.patch_grid(images.shape[-2], images.shape[-1])
        x = self.patch_embed(images)  # (B, N, D)
        B = x.shape[0]
        prefix = [t.expand(B, -1, -1) for t in (self.cls_token, self.dist_token, self.reg_token) if t is not None]
        if self.pos_embed is None:  # rotary: positions enter each attention layer instead (`rotary`)
            x = torch.cat([*prefix, x], dim=1)
        elif self.pos_slots:  # original ViT: every token has a slot; concatenate, then add
            x = torch.cat([*prefix, x], dim=1) + self.position_embedding(grid)
        else:  # timm no_embed_class (DeiT III, DINOv2 with registers): only patches get positions
            x = torch.cat([*prefix, x + self.position_embedding(grid)], dim=1)
        return self.norm_pre(self.pos_drop(x)), grid

    def hidden_states(self, images: Tensor, upto: int | None = None) -> list[Tensor]:
        """The tokens leaving each block, z_1 ... z_L of eq. (3) before the final norm: a list of
        (B, T, D), prefix tokens first; with `upto` (0-based), blocks 0 to `upto` only (the later
        ones are not run). The fast attention path: no maps are built."""
        last = len(self.blocks) - 1 if upto is None else upto
        if not 0 <= last < len(self.blocks):
            raise ValueError(f"layer index must be from 0 to {len(self.blocks) - 1}, got {upto}")
        x, grid = self.embed(images)
        rope = self.rotary(grid, x.device)
        states = []
        for block in self.blocks[: last + 1]:
            x, _ = block(x, rope=rope)
            states.append(x)
        return states

    def rotary(self, grid: tuple[int, int], device: torch.device) -> tuple[Tensor, Tensor] | None:
        """The (cos, sin) every block rotates the patch queries and keys by, or None (learned
        position embeddings): what `Block.forward` takes as `rope`."""
        return None if self.rope is None else self.rope(grid, device)

    def forward_head(self, x: Tensor) -> Tensor:
        """Normed tokens (B, T, D) -> logits (B, classes), or pooled features (B, D) without a
        head (CLIP: image embeddings (B, embed_dim)). A distilled model averages its two heads,
        as DeiT (and timm) do at inference."""
        pooled = x[:, 0] if self.config.pool == "cls" else x[:, self.prefix_tokens :].mean(dim=1)  # (B, D)
        out = self.proj(self.head(self.fc_norm(pooled)))
        if self.head_dist is not None:
            out = (out + self.head_dist(x[:, 1])) / 2
        return out

    def forward(self, images: Tensor, need_weights: bool = False) -> Tensor | tuple[Tensor, AttentionMaps]:
        """images (B, C, H, W) -> logits (B, classes) (pooled features (B, D) when num_classes=0),
        and with `need_weights` (PyTorch's name, per head as `average_attn_weights=False`) the
        per-layer post-softmax attention as `AttentionMaps` (which carries the grid)."""
        x, grid = self.embed(images)
        rope = self.rotary(grid, x.device)
        maps = []
        for block in self.blocks:
            x, attn = block(x, need_weights, rope)
            maps.append(attn)
        out = self.forward_head(self.norm(x))
        if need_weights:
            return out, AttentionMaps(maps, grid, self.prefix_tokens, self.config.prefix_names)
        return out


# Named configurations. torchvision's variants use its names; timm's use timm's.
def _dino_config(dim: int, depth: int, heads: int, **kw) -> ViTConfig:
    """What DINOv2 and DINOv3 share: no classifier, an MLP of 4 x dim, LayerScale at 1e-5."""
    return ViTConfig(num_classes=0, dim=dim, depth=depth, heads=heads, mlp_dim=4 * dim, layer_scale=1e-5, **kw)


CONFIGS: dict[str, ViTConfig] = {
    "vit_b_16": ViTConfig(patch_size=16, dim=768, depth=12, heads=12, mlp_dim=3072),
    "vit_b_32": ViTConfig(patch_size=32, dim=768, depth=12, heads=12, mlp_dim=3072),
    "vit_l_16": ViTConfig(patch_size=16, dim=1024, depth=24, heads=16, mlp_dim=4096),
    "vit_l_32": ViTConfig(patch_size=32, dim=1024, depth=24, heads=16, mlp_dim=4096),
    "vit_h_14": ViTConfig(patch_size=14, dim=1280, depth=32, heads=16, mlp_dim=5120),
    "vit_tiny_patch16_224": ViTConfig(patch_size=16, dim=192, depth=12, heads=3, mlp_dim=768),
    "vit_small_patch16_224": ViTConfig(patch_size=16, dim=384, depth=12, heads=6, mlp_dim=1536),
    "vit_base_patch16_224": ViTConfig(patch_size=16, dim=768, depth=12, heads=12, mlp_dim=3072),
    # DINO ViT-S/8 (Caron et al. 2021). Its ViT-S/16 and ViT-B/16 are timm's small and base above.
    "vit_small_patch8_224": ViTConfig(patch_size=8, dim=384, depth=12, heads=6, mlp_dim=1536),
    # DeiT with a distillation token (Touvron et al. 2021); plain DeiT is timm's tiny/small/base above.
    "deit_tiny_distilled_patch16_224": ViTConfig(dim=192, depth=12, heads=3, mlp_dim=768, distill_token=True),
    "deit_small_distilled_patch16_224": ViTConfig(dim=384, depth=12, heads=6, mlp_dim=1536, distill_token=True),
    "deit_base_distilled_patch16_224": ViTConfig(dim=768, depth=12, heads=12, mlp_dim=3072, distill_token=True),
    # DINOv2 (Oquab et al. 2024): trained at 518 px, LayerScale, no classifier; "reg4" adds 4 registers
    # (Darcet et al. 2024) with position embeddings for the patches only.
    **{
        f"vit_{size}_patch14{reg}_dinov2": _dino_config(
            *shape, image_size=518, patch_size=14, register_tokens=4 if reg else 0, pos_embed_prefix=not reg
        )
        for size, shape in (("small", (384, 12, 6)), ("large", (1024, 24, 16)))
        for reg in ("", "_reg4")
    },
    # DINOv3 (Siméoni et al. 2025): 1 CLS + 4 registers, 2-D RoPE (T = 100) instead of position
    # embeddings, LayerScale, LayerNorm eps 1e-5, no qkv bias, no classifier; trained at 256 px
    # (timm's pretrained_cfg), but RoPE has no grid of its own: any size runs without resampling.
    # Upstream reads the CLS token (timm's Eva defaults to the patch mean: pass global_pool='token').
    **{
        f"vit_{size}_patch16_dinov3{qkvb}": _dino_config(
            *shape,
            image_size=256,
            patch_size=16,
            register_tokens=4,
            pos_embed_prefix=False,
            pos_embed="rope",
            qkv_bias=qkv_bias,
            norm_eps=1e-5,
        )
        for size, shape in (("small", (384, 12, 6)), ("base", (768, 12, 12)), ("large", (1024, 24, 16)))
        for qkvb, qkv_bias in (("", False), ("_qkvb", True))
    },
    # CIFAR-10 (32x32). Patch 4 gives an 8x8 grid, the consensus for training from scratch.
    # The classic showcase: patch 8, GAP, no CLS token, no final norm: 847,626 parameters.
    "vit_cifar_showcase": ViTConfig(
        image_size=32,
        patch_size=8,
        num_classes=10,
        dim=256,
        depth=2,
        heads=2,
        mlp_dim=256,
        pool="gap",
        class_token=False,
        final_norm=False,
    ),
    # Small enough to train on two CPU cores; the bundled default model uses it.
    "vit_cifar_nano": ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=128, depth=6, heads=4, mlp_dim=256),
    # "Vision Transformer for Small-Size Datasets" (Lee et al., 2021): plain ViT, 93.6% in 100 epochs.
    "vit_cifar_tiny": ViTConfig(
        image_size=32, patch_size=4, num_classes=10, dim=192, depth=9, heads=12, mlp_dim=384, drop_path=0.1
    ),
    # omihub777/ViT-CIFAR: 90.9% at 200 epochs.
    "vit_cifar_small": ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=384, depth=7, heads=12, mlp_dim=384),
}


def list_models() -> list[str]:
    return sorted(CONFIGS)


def create_model(name: str, **overrides) -> VisionTransformer:
    """Build a named ViT with fresh weights; keyword arguments override config fields,
    e.g. `create_model("vit_b_16", num_classes=10, image_size=384)`."""
    if name not in CONFIGS:
        raise ValueError(f"unknown model {name!r}; choose one of {list_models()}")
    return VisionTransformer(replace(CONFIGS[name], **overrides))


def vit_b_16(**overrides) -> VisionTransformer:
    return create_model("vit_b_16", **overrides)


def vit_b_32(**overrides) -> VisionTransformer:
    return create_model("vit_b_32", **overrides)


def vit_l_16(**overrides) -> VisionTransformer:
    return create_model("vit_l_16", **overrides)


def vit_l_32(**overrides) -> VisionTransformer:
    return create_model("vit_l_32", **overrides)


def vit_h_14(**overrides) -> VisionTransformer:
    return create_model("vit_h_14", **overrides)
