#!/bin/sh
# vendor.sh: copies the mcpstdio library into ./mcp as package mcp, with the
# features this server uses. MCPSTDIO names the checkout of mcpstdio (from
# here: MCPSTDIO=../.. sh vendor.sh). Run it again to update the copy.
set -eu
cd "$(dirname "$0")"
# region copy
mkdir -p mcp && rm -f mcp/*.go
"$MCPSTDIO"/copy.sh mcp mcp http auth
# endregion copy
