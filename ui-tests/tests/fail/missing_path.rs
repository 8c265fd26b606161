sramfit::model! {
    mod m {
        sram: 64 KiB,
    }
}

fn main() {}
