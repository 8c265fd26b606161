/// A board crate's RAM size, which the macro cannot evaluate: the check is a const assertion (on
/// the x86-64 host, where tiling runs only for a budget the build can see).
const BOARD_SRAM: usize = 1024;

sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: BOARD_SRAM,
    }
}

fn main() {}
