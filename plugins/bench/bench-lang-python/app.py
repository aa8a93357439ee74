"""bench-lang-python: the languages benchmark's handlers in Python (plugin.yaml says which)."""

import wink


class BenchLang(wink.Plugin):
    def on_add(self, obj: wink.Object, initial_list: bool) -> None:
        self.sink = len(obj.name) + len(obj.label("app") or "")

    def on_update(self, old: wink.Object, new: wink.Object) -> None:
        self.sink = len(new.body["spec"]["containers"][0]["image"])


Handler = wink.export(BenchLang)
