"""MCP client for the `kplan mcp` test: the official MCP Python SDK (`mcp` on PyPI) talks to
`kplan mcp` over stdio, lists the tools and calls some; prints what it saw as one JSON object.

usage: client.py KPLAN SPEC.toml SCAN_PATH BAD_SPEC.toml
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def result(r):
    return {
        "is_error": bool(r.isError),
        "structured": r.structuredContent,
        "text": [c.text for c in r.content if getattr(c, "type", "") == "text"],
    }


async def main():
    kplan, spec, scan_path, bad = sys.argv[1:5]
    params = StdioServerParameters(command=kplan, args=["mcp"], env=dict(os.environ))
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.serverInfo.name
            out["protocol"] = init.protocolVersion
            tools = await session.list_tools()
            out["tools"] = {
                t.name: {"input": t.inputSchema, "output": t.outputSchema}
                for t in tools.tools
            }
            # the SDK validates structuredContent against each tool's outputSchema
            with open(spec, encoding="utf-8") as f:
                out["plan"] = result(await session.call_tool("plan", {"spec_toml": f.read()}))
            out["scan"] = result(await session.call_tool("scan", {"paths": [scan_path]}))
            with open(bad, encoding="utf-8") as f:
                out["bad"] = result(await session.call_tool("plan", {"spec_toml": f.read()}))
            out["unknown_rule"] = result(await session.call_tool("explain", {"rule": "no-such-rule"}))
            out["explain"] = result(await session.call_tool("explain", {"rule": "full-mask-literal"}))
            # the other verbs that need no toolchain, each validated against its output schema
            for name, args in [
                ("header", {"targets": ["gfx942", "sm_90a"]}),
                ("targets", {}),
                ("targets", {"name": "mi300x"}),
                ("features", {}),
                ("ops", {}),
                ("ops", {"name": "scan"}),
                ("doctor", {}),
            ]:
                key = name + ("_show" if args.get("name") else "")
                out[key] = result(await session.call_tool(name, args))
    print(json.dumps(out))


asyncio.run(main())
