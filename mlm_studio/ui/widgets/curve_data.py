"""A live curve's values: appended in amortised O(1), smoothed as TensorBoard smooths, thinned for drawing."""

from __future__ import annotations

import numpy as np

MAX_POINTS = 4000  # per curve handed to pyqtgraph


class Series:
    """A growing curve: y against step, tokens seen and time, in amortised O(1) appends; its smoothing is
    extended as points arrive rather than recomputed, so a long run costs a redraw no more than a short one."""

    def __init__(self) -> None:
        self.data = np.zeros((5, 256))  # rows: step, tokens, time, value, smoothed value
        self.size = 0
        self._weight, self._smoothed, self._average = -1.0, 0, 0.0  # smoothing done so far, and its state

    def append(self, step: float, tokens: float, time: float, value: float) -> None:
        if self.size == self.data.shape[1]:
            self.data = np.concatenate([self.data, np.zeros_like(self.data)], axis=1)
        self.data[:4, self.size] = (step, tokens, time, value)
        self.size += 1

    def x(self, axis: str) -> np.ndarray:
        return self.data[("step", "tokens", "time").index(axis), : self.size]

    @property
    def y(self) -> np.ndarray:
        return self.data[3, : self.size]

    def smoothed(self, weight: float) -> np.ndarray:
        """TensorBoard's smoothing of y: an exponential moving average divided by (1 - weight^n), so the first
        points are not pulled towards zero; each value depends only on the values before it."""
        if weight <= 0:
            return self.y
        if weight != self._weight:
            self._weight, self._smoothed, self._average = weight, 0, 0.0
        average, values, out = self._average, self.data[3], self.data[4]
        for i in range(self._smoothed, self.size):
            average = average * weight + (1 - weight) * values[i]
            out[i] = average / (1 - weight ** (i + 1))
        self._smoothed, self._average = self.size, average
        return out[: self.size]


def thinned(x: np.ndarray, y: np.ndarray, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most about `limit` points: each stretch of the curve keeps its lowest and highest point, in order."""
    n = len(x)
    if n <= limit:
        return x, y
    stride = -(-n // (limit // 2))
    rows = n // stride
    block = y[: rows * stride].reshape(rows, stride)
    base = np.arange(rows) * stride
    keep = np.sort(np.concatenate([base + block.argmin(1), base + block.argmax(1), np.arange(rows * stride, n)]))
    keep = np.unique(keep)
    return x[keep], y[keep]
