"""Energies written in PyTorch or JAX: the package differentiates them (``Model.from_torch``,
``Model.from_jax``), so a user writes f only.

``fn`` maps a batch of states to f, one number per row: for ``"spin"`` and ``"binary"`` the
states are an ``(n, d)`` float tensor/array of model values (−1/+1 or 0/1), for
``"categorical"`` the one-hot ``(n, d, k)`` encoding. ∇f comes from one backward pass of
Σ f over the whole batch, which is each row's gradient when rows do not interact (as the
samplers need: ``fn`` must treat rows independently). The sampler calls it once per step with
every chain. Values are made in ``dtype`` (float64 by default, so that a model gives the same
chains as the same energy in numpy) and handed back to Rust as float64.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np


def _encode(x: np.ndarray, domain: str, k: Optional[int]) -> np.ndarray:
    """The model values (spin, binary) or their one-hot encoding (categorical), as float64."""
    if domain == "categorical":
        return np.eye(k)[x]
    return x.astype(np.float64)


def torch_f_grad(fn: Callable[[Any], Any], domain: str, k: Optional[int], dtype: Any,
                 device: Any) -> Callable[[np.ndarray], tuple]:
    """The (f, ∇f) callback of a PyTorch energy, on ``device`` in ``dtype``."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    device = torch.device("cpu") if device is None else torch.device(device)

    def f_grad(x: np.ndarray) -> tuple:
        t = torch.as_tensor(_encode(x, domain, k), dtype=dtype, device=device).requires_grad_(True)
        f = fn(t)
        if not isinstance(f, torch.Tensor) or tuple(f.shape) != (len(x),):
            shape = tuple(f.shape) if isinstance(f, torch.Tensor) else type(f).__name__
            raise ValueError(f"fn must return one number per state, shape ({len(x)},), got {shape}")
        (g,) = torch.autograd.grad(f.sum(), t)
        # Back to the host as float64 (a CUDA tensor is copied; the samplers run on the CPU).
        return (f.detach().to("cpu", torch.float64).numpy(), g.detach().to("cpu", torch.float64).numpy())

    return f_grad


def jax_f_grad(fn: Callable[[Any], Any], domain: str, k: Optional[int], dtype: Any) -> Callable[[np.ndarray], tuple]:
    """The (f, ∇f) callback of a JAX energy, in ``dtype`` (float64 needs JAX's 64-bit mode,
    which this turns on when asked for it).

    jit compiles once per input shape, and samplers evaluate batches of varying size (the
    chains that moved, a minibatch of proposals), so a batch of n rows is padded to the next
    power of two by repeating its first row and the padding is dropped from f and ∇f: at most
    ⌈log2 n_max⌉ + 1 compilations instead of one per distinct size. ``fn`` must treat rows
    independently (one energy per row), which its contract already asks; then the padding
    changes nothing in the rows returned."""
    import jax
    import jax.numpy as jnp

    dtype = jnp.float64 if dtype is None else dtype
    if jnp.dtype(dtype) == jnp.float64 and not jax.config.jax_enable_x64:
        # Without it JAX silently computes a float64 request in float32.
        jax.config.update("jax_enable_x64", True)

    def total(t: Any) -> tuple:
        f = fn(t)
        return f.sum(), f

    value_and_grad = jax.jit(jax.value_and_grad(total, has_aux=True))

    def f_grad(x: np.ndarray) -> tuple:
        n = len(x)
        padded = 1 << max(n - 1, 0).bit_length()
        rows = x if padded == n else np.concatenate([x, np.repeat(x[:1], padded - n, axis=0)])
        t = jnp.asarray(_encode(rows, domain, k), dtype=dtype)
        (_, f), g = value_and_grad(t)
        if f.shape != (padded,):
            raise ValueError(f"fn must return one number per state, shape ({n},), got {f.shape}")
        return np.asarray(f[:n], dtype=np.float64), np.asarray(g[:n], dtype=np.float64)

    return f_grad
