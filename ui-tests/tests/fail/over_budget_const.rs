/// A board crate's RAM size, which the macro cannot evaluate: the check is a const assertion.
const BOARD_SRAM: usize = 4 * 1024;

sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: BOARD_SRAM,
    }
}

fn main() {}
