# Tiny helpers to write Fluid-style program text.
def tensor_var(name, dt, dims=None):
    d = "".join(f"          dims: {x}\n" for x in (dims or []))
    return f"""  vars {{
    name: "{name}"
    type {{
      type: LOD_TENSOR
      lod_tensor {{
        tensor {{
          data_type: {dt}
{d}        }}
      }}
    }}
  }}
"""
def chan_var(name, dt, cap):
    return f"""  vars {{
    name: "{name}"
    type {{
      type: CHANNEL
      channel {{
        data_type: {dt}
        capacity: {cap}
      }}
    }}
  }}
"""
def other_var(name, t):
    return f"""  vars {{
    name: "{name}"
    type {{
      type: {t}
    }}
  }}
"""
def attr(name, t, v):
    key = {"INT":"i","FLOAT":"f","STRING":"s","INTS":"ints","STRINGS":"strings","BOOLEAN":"b","BLOCK":"block_idx","LONG":"l"}[t]
    if isinstance(v, list):
        body = "".join(f"      {key}: {fmt(x)}\n" for x in v)
    else:
        body = f"      {key}: {fmt(v)}\n"
    return f"""    attrs {{
      name: "{name}"
      type: {t}
{body}    }}
"""
def fmt(x):
    if isinstance(x, bool): return "true" if x else "false"
    if isinstance(x, str): return '"' + x + '"'
    return str(x)
def params(kind, d):
    out = ""
    for p, args in d:
        a = "".join(f'      arguments: "{x}"\n' for x in args)
        out += f"""    {kind} {{
      parameter: "{p}"
{a}    }}
"""
    return out
def op(type_, inputs=(), outputs=(), attrs=()):
    return "  ops {\n" + params("inputs", inputs) + params("outputs", outputs) + f'    type: "{type_}"\n' + "".join(attr(*a) for a in attrs) + "  }\n"
def fill(out, dtype, value, shape=(1,)):
    return op("fill_constant", outputs=[("Out",[out])], attrs=[("force_cpu","BOOLEAN",False),("value","FLOAT",value),("shape","INTS",list(shape)),("dtype","INT",dtype)])
def block(idx, parent, vars_, ops_):
    return f"blocks {{\n  idx: {idx}\n  parent_idx: {parent}\n" + "".join(vars_) + "".join(ops_) + "}\n"
