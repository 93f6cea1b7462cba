module mcpstdio

go 1.26
