"""Type stubs of the Rust extension module `dlp_mcmc._dlp` (python/src/*.rs). Use the `dlp_mcmc`
package's wrappers (`dlp_mcmc.Model`, `dlp_mcmc.sample`, `dlp_mcmc.gof`, `dlp_mcmc.exact`), which check types
and convert arrays before calling these."""

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

def sampler_names() -> list[str]: ...
def ess_bulk(draws: npt.NDArray[np.float64]) -> float: ...
def rhat(draws: npt.NDArray[np.float64]) -> float: ...
def exact(
    model: Model, sampler: str, step_size: Optional[float] = None, preconditioner: Optional[list[float]] = None
) -> str: ...
def sample(
    model: Model,
    sampler: str,
    *,
    step_size: Optional[float],
    step_size_min: Optional[float],
    preconditioner: Optional[list[float]],
    batch_size: Optional[int],
    chains: int,
    steps: int,
    burn_in: int,
    thin: int,
    seed: int,
    threads: int,
    init: Optional[npt.NDArray[np.int64]],
    random_init: bool,
    keep_trace: bool,
    progress: bool = False,
    adapt: bool = False,
    target_accept: Optional[float] = None,
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
) -> str: ...
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
) -> str: ...
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
) -> str: ...
