/// A board crate's RAM size, which the macro cannot evaluate: the check is a const assertion.
const BOARD_SRAM: usize = 1024;

sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: BOARD_SRAM,
    }
}

fn main() {}
