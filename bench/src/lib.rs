//! mcpx-bench: benchmarks (issue: bench). Not built out yet.
