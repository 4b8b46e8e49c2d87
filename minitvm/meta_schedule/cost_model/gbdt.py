"""A small gradient-boosted regression-tree model in numpy: the cost model's fallback when
neither XGBoost nor LightGBM is installed. Trees are plain lists, so they save as JSON."""

from __future__ import annotations

import numpy as np

_BINS = 16  # candidate thresholds per feature: quantiles of its values


def _fit_tree(x: np.ndarray, g: np.ndarray, depth: int, min_leaf: int, thresholds: list) -> list:
    """A regression tree fit to residuals `g`, as nested lists: a leaf is [value], a split is
    [feature, threshold, left, right] (left: x[feature] <= threshold)."""
    if depth == 0 or len(g) < 2 * min_leaf:
        return [float(g.mean())]
    best = (0.0, None, None)
    total, n = g.sum(), len(g)
    base = total * total / n
    for f, cuts in enumerate(thresholds):
        if len(cuts) == 0:
            continue
        left = x[:, f][:, None] <= cuts[None, :]  # n x cuts
        nl = left.sum(axis=0)
        sl = g @ left
        ok = (nl >= min_leaf) & (n - nl >= min_leaf)
        if not ok.any():
            continue
        gain = np.where(
            ok, sl**2 / np.maximum(nl, 1) + (total - sl) ** 2 / np.maximum(n - nl, 1) - base, -1.0
        )
        k = int(np.argmax(gain))
        if gain[k] > best[0]:
            best = (float(gain[k]), f, float(cuts[k]))
    if best[1] is None:
        return [float(g.mean())]
    _, f, t = best
    mask = x[:, f] <= t
    return [
        f,
        t,
        _fit_tree(x[mask], g[mask], depth - 1, min_leaf, thresholds),
        _fit_tree(x[~mask], g[~mask], depth - 1, min_leaf, thresholds),
    ]


def _predict_tree(tree: list, x: np.ndarray) -> np.ndarray:
    out = np.empty(len(x))
    stack = [(tree, np.arange(len(x)))]
    while stack:
        node, idx = stack.pop()
        if len(node) == 1:
            out[idx] = node[0]
            continue
        f, t, left, right = node
        mask = x[idx, f] <= t
        stack.append((left, idx[mask]))
        stack.append((right, idx[~mask]))
    return out


class NumpyGBDT:
    """Least-squares gradient boosting of shallow trees."""

    def __init__(self, n_trees: int = 80, depth: int = 4, learning_rate: float = 0.15) -> None:
        self.n_trees = n_trees
        self.depth = depth
        self.learning_rate = learning_rate
        self.base = 0.0
        self.trees: list = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> NumpyGBDT:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        thresholds = []
        for f in range(x.shape[1]):
            cuts = np.unique(np.quantile(x[:, f], np.linspace(0, 1, _BINS + 2)[1:-1]))
            thresholds.append(cuts[cuts < x[:, f].max()])
        min_leaf = max(1, len(y) // 50)
        self.base = float(y.mean())
        pred = np.full(len(y), self.base)
        self.trees = []
        for _ in range(self.n_trees):
            tree = _fit_tree(x, y - pred, self.depth, min_leaf, thresholds)
            self.trees.append(tree)
            pred += self.learning_rate * _predict_tree(tree, x)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        out = np.full(len(x), self.base)
        for tree in self.trees:
            out += self.learning_rate * _predict_tree(tree, x)
        return out

    def to_json(self) -> dict:
        return {
            "n_trees": self.n_trees,
            "depth": self.depth,
            "learning_rate": self.learning_rate,
            "base": self.base,
            "trees": self.trees,
        }

    @staticmethod
    def from_json(data: dict) -> NumpyGBDT:
        model = NumpyGBDT(int(data["n_trees"]), int(data["depth"]), float(data["learning_rate"]))
        model.base = float(data["base"])
        model.trees = [_check_tree(t) for t in data["trees"]]
        return model


def _check_tree(node: object) -> list:
    """A tree read from JSON, checked to be the list shape _predict_tree walks."""
    from ...error import TuningError

    stack = [node]
    while stack:
        n = stack.pop()
        ok = isinstance(n, list) and (
            (len(n) == 1 and isinstance(n[0], int | float))
            or (len(n) == 4 and isinstance(n[0], int) and isinstance(n[1], int | float))
        )
        if not ok:
            raise TuningError(f"cost model JSON: malformed tree node {str(n)[:80]!r}")
        if len(n) == 4:
            stack.extend(n[2:])
    return node
