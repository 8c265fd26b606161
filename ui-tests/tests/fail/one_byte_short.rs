//! One byte less than the planned arena (2048 bytes) fails with the budget report.
sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: 2047,
    }
}

fn main() {}
