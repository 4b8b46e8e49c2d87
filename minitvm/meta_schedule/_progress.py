"""Progress output and the tuning curve (best GFLOPS against trials and seconds)."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from typing import Any


class Progress:
    """A tqdm bar when tqdm is installed, else one plain line per measured batch."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total = total
        self.enabled = enabled
        self.start = time.monotonic()
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc="tuning", unit="trial", file=sys.stderr)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def update(self, done: int, step: int, task: str, best_gflops: float, failed: int) -> None:
        if not self.enabled:
            return
        text = f"best {best_gflops:.2f} GFLOPS"
        if self.bar is not None:
            self.bar.update(step)
            self.bar.set_postfix_str(f"{task}: {text}, {failed} failed")
            return
        print(
            f"[meta_schedule] {done}/{self.total} trials  task {task}: {text}  "
            f"({failed} failed)  {self.elapsed():.1f} s",
            flush=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Curve:
    """Points (trials, seconds, task, best GFLOPS of the task and overall, seconds spent in
    search, builds and runs so far) written to work_dir as tuning_curve.json and .csv after every batch, and a PNG at the end."""

    FIELDS = (
        "trials", "seconds", "task", "task_best_gflops", "best_gflops", "search_s", "build_s",
        "run_s", "remeasure_s",
    )  # fmt: skip

    def __init__(self, work_dir: str | None) -> None:
        self.work_dir = work_dir
        self.points: list[dict[str, Any]] = []

    def add(self, **point: Any) -> None:
        self.points.append({k: point[k] for k in self.FIELDS})
        if self.work_dir is None:
            return
        with open(os.path.join(self.work_dir, "tuning_curve.json"), "w") as f:
            json.dump(self.points, f, indent=1)
        with open(os.path.join(self.work_dir, "tuning_curve.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.FIELDS)
            writer.writeheader()
            writer.writerows(self.points)

    def plot(self) -> str | None:
        """tuning_curve.png when matplotlib is installed; returns its path or None."""
        if self.work_dir is None or not self.points:
            return None
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        gflops = [p["best_gflops"] for p in self.points]
        ax1.step([p["trials"] for p in self.points], gflops, where="post")
        ax1.set_xlabel("trials")
        ax2.step([p["seconds"] for p in self.points], gflops, where="post")
        ax2.set_xlabel("seconds")
        for ax in (ax1, ax2):
            ax.set_ylabel("best GFLOPS")
            ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(self.work_dir, "tuning_curve.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
