// bench-lang-javascript: the languages benchmark's handlers in JavaScript (plugin.yaml says
// which).
import { definePlugin } from "wink-guest";

let sink = 0;

export const handler = definePlugin({
  onAdd(obj) {
    sink = obj.name.length + (obj.label("app") ?? "").length;
  },
  onUpdate(old, obj) {
    sink = obj.body.spec.containers[0].image.length;
  },
});
