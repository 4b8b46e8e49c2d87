"""Progress output and the tuning curve (best GFLOPS against trials and seconds)."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from typing import Any

# a max_trials_global this large stands for "no limit" (a time budget bounds the tuning)
NO_TRIAL_LIMIT = 10**9


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
                # a time budget has no trial count: the bar counts up without a total
                bar_total = total if total < NO_TRIAL_LIMIT else None
                self.bar = tqdm(total=bar_total, desc="tuning", unit="trial", file=sys.stderr)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def update(
        self,
        done: int,
        step: int,
        task: str,
        best_gflops: float,
        failed: int,
        best_sec: float | None = None,
        flops: float | None = None,
    ) -> None:
        """A batch of `step` trials done; a task without FLOPs (data movement) shows its best
        time, not 0 GFLOPS."""
        if not self.enabled:
            return
        text = f"best {best_gflops:.2f} GFLOPS"
        if flops == 0 and best_sec is not None:
            timed = best_sec < float("inf")
            text = f"best {best_sec * 1e6:.1f} us (no FLOPs)" if timed else "no time yet"
        if self.bar is not None:
            self.bar.update(step)
            self.bar.set_postfix_str(f"{task}: {text}, {failed} failed")
            return
        of = f"/{self.total}" if self.total < NO_TRIAL_LIMIT else ""  # a time budget only
        print(
            f"[meta_schedule] {done}{of} trials  task {task}: {text}  "
            f"({failed} failed)  {self.elapsed():.1f} s",
            flush=True,
        )

    def phase(self, text: str) -> None:
        """A step after the trials (so the user knows what the time goes to)."""
        if self.enabled:
            print(f"[meta_schedule] {text} ({self.elapsed():.1f} s so far) ...", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Curve:
    """Points (trials, seconds, task, best GFLOPS of the task and overall, seconds spent in
    search, builds and runs so far) written to work_dir as tuning_curve.json and .csv after every batch, and a PNG at the end."""

    FIELDS = (
        "trials", "seconds", "task", "task_best_gflops", "best_gflops", "search_s", "build_s",
        "run_s", "remeasure_s", "tasks_timed",
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
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        searched = [p for p in self.points if p["task"] != "(re-measured)"]
        # overall GFLOPS is comparable only once every kernel has a time (a kernel's first
        # time adds to the total); from there the best so far is the running maximum
        full = [p for p in searched if _all_timed(p)] or searched
        best, so_far = [], 0.0
        for p in full:
            so_far = max(so_far, p["best_gflops"])
            best.append(so_far)
        final = [p for p in self.points if p["task"] == "(re-measured)"]
        for ax, key in zip(axes, ("trials", "seconds")):
            ax.plot([p[key] for p in searched], [p["best_gflops"] for p in searched], ".",
                    color="0.6", label="after each batch")  # fmt: skip
            ax.step([p[key] for p in full], best, where="post", label="best so far")
            if final:
                ax.plot([final[-1][key]], [final[-1]["best_gflops"]], "s", label="re-measured")
            ax.set_xlabel(key)
            ax.set_ylabel("GFLOPS of all kernels (weighted)")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="best", fontsize="small")
        name = os.path.basename(os.path.abspath(self.work_dir))
        fig.suptitle(f"minitvm tuning of '{name}': best-so-far GFLOPS (all kernels timed)")
        fig.tight_layout()
        path = os.path.join(self.work_dir, "tuning_curve.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


def _all_timed(point: dict) -> bool:
    """Whether every task had a time at this point ("k/n" with k == n; old curves: yes)."""
    timed, _, total = str(point.get("tasks_timed", "1/1")).partition("/")
    return timed == total
