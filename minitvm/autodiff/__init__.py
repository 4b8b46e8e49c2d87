"""dlsys-style training API over the graph IR: nodes, `gradients`, `Executor`, and the kernel
builders of the assignment (`minitvm.autodiff.kernels`).

    from minitvm import autodiff as ad
    x = ad.Variable("x"); w = ad.Variable("w")
    y = ad.relu_op(ad.matmul_op(x, w))
    grad_w, = ad.gradients(ad.reduce_sum_axis_zero(y), [w])
    y_val, gw_val = ad.Executor([y, grad_w]).run({x: xv, w: wv})
"""

from . import graph, kernels
from .executor import Executor, emit_nodes
from .graph import *

__all__ = ["Executor", "emit_nodes", "graph", "kernels"]
__all__ += graph.__all__
