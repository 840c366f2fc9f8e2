"""Issue #9: `cudatool tables` (all four tables, and the export tables alone) against `readelf -r
-W`, which only lists the relocations that cudatool walks to find the tables. Nothing else
recovers these tables statically; readelf is the floor a user would start from."""


def cases(ctx):
    out = []
    for version, lib in ctx.drivers:
        readelf = {"readelf -r -W": ["readelf", "-r", "-W", lib]}
        out.append({
            "name": "tables --json (all four)", "file": version,
            "cudatool": [ctx.cudatool, "tables", "--json", lib],
            "baselines": readelf,
        })
        out.append({
            "name": "tables --kind exporttables", "file": version,
            "cudatool": [ctx.cudatool, "tables", "--kind", "exporttables", lib],
            "baselines": readelf,
        })
    return out
