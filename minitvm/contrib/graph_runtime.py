"""TVM's pre-0.8 name of `tvm.contrib.graph_executor`."""

from .graph_executor import BenchmarkResult, GraphExecutorFactoryModule, GraphModule, create

__all__ = ["BenchmarkResult", "GraphExecutorFactoryModule", "GraphModule", "create"]
