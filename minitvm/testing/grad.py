"""`check_grad`: compare relax.transform.Gradient against central finite differences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..error import MiniTVMError


def _runner(mod: Any, func_name: str, use_vm: bool) -> Any:
    from .. import relax

    if not use_vm:
        return lambda *args: relax.eval_ref.evaluate(mod, *args, func_name=func_name)
    from .. import runtime

    vm = relax.VirtualMachine(relax.build(mod, "llvm"), runtime.cpu(0))

    def to_np(v: Any) -> Any:
        return tuple(to_np(f) for f in v) if isinstance(v, tuple | list) else v.numpy()

    return lambda *args: to_np(
        vm[func_name](*[runtime.nd.array(np.ascontiguousarray(a)) for a in args])
    )


def check_grad(
    mod: Any,
    inputs: Sequence[np.ndarray],
    func_name: str = "main",
    require_grads: Sequence[int] | None = None,
    eps: float = 1e-6,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    num_directions: int = 2,
    seed: int = 0,
    use_vm: bool = False,
) -> list[np.ndarray]:
    """Check the gradients of the scalar function `mod[func_name]` at `inputs`.

    The adjoint from `relax.transform.Gradient` (run by the reference evaluator, or compiled by
    `relax.build` and run on the VM when `use_vm`) is compared, in `num_directions` random
    directions per input, with central differences (f(x + eps d) - f(x - eps d)) / (2 eps).
    `require_grads` lists the positions of the inputs to check (default: the float ones).
    Returns the gradients.
    """
    from .. import relax

    if isinstance(mod, relax.Function):
        from ..ir.module import IRModule

        mod = IRModule({func_name: mod})
    func = mod[func_name]
    inputs = [np.asarray(a) for a in inputs]
    which = (
        [k for k, a in enumerate(inputs) if a.dtype.kind == "f"]
        if require_grads is None
        else list(require_grads)
    )
    adjoint = relax.transform.Gradient(func_name, [func.params[k] for k in which])(mod)
    forward = _runner(mod, func_name, use_vm)
    backward = _runner(adjoint, f"{func_name}_adjoint", use_vm)
    loss, grads = backward(*inputs)
    np.testing.assert_allclose(
        np.asarray(loss), np.asarray(forward(*inputs)), rtol=1e-10, atol=1e-12
    )
    rng = np.random.default_rng(seed)
    for k, grad in zip(which, grads):
        grad = np.asarray(grad)
        if grad.shape != inputs[k].shape:
            raise MiniTVMError(
                f"check_grad: the gradient of input {k} has shape {grad.shape}, "
                f"the input has shape {inputs[k].shape}"
            )
        for _ in range(num_directions):
            d = rng.standard_normal(inputs[k].shape).astype(inputs[k].dtype)
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[k] = inputs[k] + eps * d
            minus[k] = inputs[k] - eps * d
            numeric = (float(np.sum(forward(*plus))) - float(np.sum(forward(*minus)))) / (2 * eps)
            analytic = float(np.sum(grad * d))
            np.testing.assert_allclose(
                analytic,
                numeric,
                rtol=rtol,
                atol=atol,
                err_msg=f"check_grad: gradient of {func_name} w.r.t. input {k} "
                f"('{func.params[k].name_hint}') disagrees with finite differences",
            )
    return [np.asarray(g) for g in grads]


__all__ = ["check_grad"]
