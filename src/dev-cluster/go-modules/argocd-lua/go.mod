module edgeward.dev/test-tools/argocd-lua

go 1.26.0

require (
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20201124131017-552bb3c4c3bf
)
