"""Turns a PyTorch nn.Module into the TorchScript file `lockstep train --model torchscript:PATH`
trains, after checking it has a signature lockstep can call:

  forward(x) -> logits [N, classes]                         class labels, fixed-length samples
  forward(x, lengths) -> logits [N, classes]                class labels, variable-length series
  forward(x, lengths) -> (logits [N, T, C], out_lengths [N]) CTC: C = tokens + 1, blank last

x is a float batch [N, *sample_shape] (normalised, zero-padded past each length), lengths an
int64 [N] tensor on the CPU. lockstep checks the same again on a probe batch before step 1.

  python3 docs/python/script_model.py --file my_model.py --class MyGruCtc \\
      --args '{"features": 40, "tokens": 27}' --sample-shape 40,200 --out model.pt

--sample-shape runs a probe batch of 2 and prints the output shapes (optional).
"""
import argparse
import importlib.util
import json
import sys

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--file", required=True, help="the Python file that defines the module")
    p.add_argument("--class", dest="cls", required=True, help="the nn.Module class in it")
    p.add_argument("--args", default="{}", help="constructor keyword arguments, as JSON")
    p.add_argument("--sample-shape", default="", help="C,T or C,H,W: probe with a batch of 2 of this shape")
    p.add_argument("--out", required=True, help="the .pt file to write")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before the module is built (its initial weights)")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    spec = importlib.util.spec_from_file_location("user_model", a.file)
    if spec is None or spec.loader is None:
        sys.exit(f"script_model: cannot import {a.file}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, a.cls):
        sys.exit(f"script_model: {a.file} defines no {a.cls}")
    model = getattr(mod, a.cls)(**json.loads(a.args))
    try:
        scripted = torch.jit.script(model)
    except Exception as e:  # torch.jit's own message says which line it cannot compile
        sys.exit(f"script_model: torch.jit.script({a.cls}) fails: {str(e).splitlines()[0]}")
    schema = scripted.forward.schema
    inputs = len(schema.arguments) - 1
    returns = str(schema.returns[0].type) if schema.returns else "None"
    tuple_out = returns.startswith("Tuple")
    if inputs not in (1, 2) or (tuple_out and inputs != 2):
        sys.exit(f"script_model: forward{schema.arguments[1:]} -> {returns}: lockstep calls forward(x) -> Tensor, "
                 "forward(x, lengths) -> Tensor or forward(x, lengths) -> (Tensor, Tensor)")
    kind = "CTC" if tuple_out else "classes"
    if a.sample_shape:
        shape = [2] + [int(d) for d in a.sample_shape.split(",")]
        x, lengths = torch.zeros(shape), torch.full((2,), shape[-1], dtype=torch.long)
        scripted.eval()
        with torch.no_grad():
            out = scripted(x, lengths) if inputs == 2 else scripted(x)
        shapes = [tuple(t.shape) for t in out] if tuple_out else [tuple(out.shape)]
        print(f"probe {tuple(shape)} -> {shapes}")
    scripted.save(a.out)
    print(f"wrote {a.out}: {a.cls} ({kind}: forward with {inputs} input(s) -> {returns}), "
          f"{sum(t.numel() for t in scripted.parameters())} parameters")


if __name__ == "__main__":
    main()
