//! One byte less than the planned arena (17408 bytes) fails with the budget report.
sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 17407,
    }
}

fn main() {}
