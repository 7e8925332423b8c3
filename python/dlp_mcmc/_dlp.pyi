"""Type stubs of the Rust extension module `dlp_mcmc._dlp` (python/src/*.rs). Use the `dlp_mcmc`
package's wrappers (`dlp_mcmc.Model`, `dlp_mcmc.sample`, `dlp_mcmc.gof`, `dlp_mcmc.exact`,
`dlp_mcmc.logz`), which convert arrays before calling these and wrap what they return in
typed classes."""

from os import PathLike
from typing import Any, Callable, Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str

class Model:
    @staticmethod
    def from_file(path: Union[str, PathLike[str]]) -> Model: ...
    @staticmethod
    def from_json(text: str, name: str) -> Model: ...
    @staticmethod
    def from_callable(
        d: int, domain: str, func: Callable[[npt.NDArray[np.int64]], tuple[Any, Any]], k: Optional[int] = None
    ) -> Model: ...
    @property
    def d(self) -> int: ...
    @property
    def domain(self) -> str: ...
    @property
    def values(self) -> list[int]: ...
    @property
    def kind(self) -> str: ...
    def to_json(self) -> str: ...
    def log_density(self, x: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...
    def log_density_grad(self, x: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

Floats = Any  # a float64 array, or anything numpy converts to one

def ising(j: Floats, b: Optional[Floats] = None, domain: str = "spin") -> Model: ...
def potts(j: Floats, h: Floats) -> Model: ...
def rbm(w: Floats, b: Floats, c: Floats, domain: str = "binary") -> Model: ...
def categorical(probs: Optional[Floats] = None, logits: Optional[Floats] = None) -> Model: ...
def table(log_prob: Floats, d: int, domain: str = "binary", k: Optional[int] = None) -> Model: ...
def logistic(
    x: Floats, y: Floats, b: Optional[Floats] = None, domain: str = "spin", scaling: str = "sum", c: Optional[float] = None
) -> Model: ...
def bnn(x: Floats, y: Floats, hidden: int, tau: float = 100.0) -> Model: ...
def sampler_names() -> list[str]: ...
def sampler_params(name: str) -> Optional[list[tuple[str, bool]]]: ...
def ess_bulk(draws: npt.NDArray[np.float64]) -> float: ...
def rhat(draws: npt.NDArray[np.float64]) -> float: ...
def exact(
    model: Model, sampler: str, step_size: Optional[float] = None, preconditioner: Optional[list[float]] = None
) -> dict[str, Any]: ...
def logz(
    model: Model,
    method: str,
    *,
    chains: Optional[int] = None,
    temperatures: Optional[int] = None,
    sampler: Optional[str] = None,
    step_size: Optional[float] = None,
    seed: Optional[int] = None,
    threads: Optional[int] = None,
) -> dict[str, Any]: ...
def sample(
    model: Model,
    sampler: str,
    *,
    chains: int,
    steps: int,
    burn_in: int,
    thin: int,
    seed: int,
    threads: Optional[int] = None,
    init: Optional[npt.NDArray[np.int64]] = None,
    random_init: bool = True,
    keep_trace: bool = False,
    progress: Optional[Callable[[int], Any]] = None,
    options: Optional[dict[str, Any]] = None,
) -> dict[str, Any]: ...
def kdsd(
    samples: npt.NDArray[np.int64],
    model: Model,
    *,
    statistic: str,
    bootstrap: Optional[str],
    reps: int,
    alpha: float,
    seed: int,
    kernel: str,
    kernel_scale: float,
    burnin: int,
) -> dict[str, Any]: ...
def gfksd(
    samples: npt.NDArray[np.int64],
    model: Model,
    *,
    statistic: str,
    bootstrap: Optional[str],
    reps: int,
    alpha: float,
    seed: int,
    surrogate: str,
    bandwidth: Optional[float],
    jitter: Optional[npt.NDArray[np.float64]],
    burnin: int,
) -> dict[str, Any]: ...
def mmd(
    samples: npt.NDArray[np.int64],
    *,
    model: Optional[Model],
    reference: Optional[npt.NDArray[np.int64]],
    values: Optional[list[int]],
    model_samples: Optional[int],
    burnin: int,
    statistic: str,
    reps: int,
    alpha: float,
    seed: int,
    kernel_scale: float,
) -> dict[str, Any]: ...
