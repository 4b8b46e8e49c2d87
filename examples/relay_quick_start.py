"""The classic Relay quick start: a relay.testing workload, relay.build, the graph executor,
export_library and load_module (the deployed module must give the same output).

relay.build translates the Relay program to relax and runs the one relax pipeline.
"""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor, utils
from minitvm.env import example_small

image_shape = (3, 32, 32) if example_small() else (3, 224, 224)
mod, params = relay.testing.resnet.get_workload(num_layers=18, image_shape=image_shape)

with tvm.transform.PassContext(opt_level=3):
    lib = relay.build(mod, "llvm", params=params)

dev = tvm.cpu()
data = np.random.uniform(-1, 1, size=(1, *image_shape)).astype("float32")
module = graph_executor.GraphModule(lib["default"](dev))
module.set_input("data", data)
module.run()
out = module.get_output(0, tvm.nd.empty((1, 1000))).numpy()
print(out.flatten()[:10])

temp = utils.tempdir()
path = temp.relpath("deploy_lib.tar")
lib.export_library(path)
loaded = graph_executor.GraphModule(tvm.runtime.load_module(path)["default"](dev))
loaded.run(data=tvm.nd.array(data))
tvm.testing.assert_allclose(loaded.get_output(0).numpy(), out, atol=1e-5)
assert abs(out.sum() - 1.0) < 1e-3  # the workload ends in softmax
print("deployed module agrees")
