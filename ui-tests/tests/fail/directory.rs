sramfit::model! {
    mod m {
        path: "models",
    }
}

fn main() {}
