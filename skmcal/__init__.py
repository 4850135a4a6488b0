"""skmcal: model-change active learning on graphs for scikit-learn users."""

from . import stopping
from ._threads import get_blas_threads, set_blas_threads
from .classifier import SpectralGraphClassifier
from .coldstart import cold_start
from .graph import GRAPH_CACHE, NodeSet, SpectralGraph, clear_graph_cache
from .modal_compat import patch_modal
from .query import model_change, random_sampling, sopt, uncertainty, vopt

__all__ = [
    "GRAPH_CACHE",
    "NodeSet",
    "SpectralGraph",
    "SpectralGraphClassifier",
    "clear_graph_cache",
    "get_blas_threads",
    "cold_start",
    "model_change",
    "patch_modal",
    "random_sampling",
    "set_blas_threads",
    "sopt",
    "stopping",
    "uncertainty",
    "vopt",
]

__version__ = "0.1.0"
