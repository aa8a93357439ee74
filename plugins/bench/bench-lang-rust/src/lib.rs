//! bench-lang-rust: the languages benchmark's handlers in Rust (`plugin.yaml` says which).

use std::hint::black_box;

use wink_guest::serde_json::Value;
use wink_guest::{Action, Handler, HandlerError, Object};

#[derive(Default)]
struct BenchLang;

impl Handler for BenchLang {
    fn init(&mut self, _config: &str) -> Result<(), String> {
        Ok(())
    }

    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        black_box((obj.name().len(), obj.label("app").map(str::len)));
        Ok(Action::AwaitChange)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        let pod: Value = new.json_value()?;
        black_box(pod.pointer("/spec/containers/0/image").and_then(Value::as_str).map(str::len));
        Ok(Action::AwaitChange)
    }

    fn on_delete(&mut self, _obj: &Object, _final_state_unknown: bool) -> Result<Action, HandlerError> {
        Ok(Action::AwaitChange)
    }
}

wink_guest::export_handler!(BenchLang);
