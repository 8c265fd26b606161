// 24,576 bytes of buffers, the smallest 8,192: none fits the first pool, and the last is too small.
sramfit::model! {
    mod m {
        path: "../tests/models/branch_merge.onnx",
        pools: { fast: 4 KiB, slow: 16 KiB },
    }
}

fn main() {}
