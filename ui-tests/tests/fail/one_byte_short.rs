//! One byte less than the planned arena (1920 bytes) fails with the budget report.
sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: 1919,
    }
}

fn main() {}
