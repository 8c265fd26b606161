/// A budget the macro cannot evaluate, for a microcontroller: the const assertion names the
/// tiling declined for its small gain (on x86-64, `over_budget_const.rs`, every tiling is).
const BOARD_SRAM: usize = 1024;

sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: BOARD_SRAM,
        target: "thumbv7em-none-eabihf",
    }
}

fn main() {}
