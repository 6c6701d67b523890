// ui/js/classjoin.js: a page that joined a class by a typed code names it in its address, so that a reload rejoins.
import assert from "node:assert/strict";
import { test } from "node:test";

import { joinedAddress } from "../../ui/js/classjoin.js";

test("the joined class's code goes in the address, whatever the address held", () => {
  assert.equal(joinedAddress("http://192.168.1.20:7860/", "ACD34F"), "http://192.168.1.20:7860/?class=ACD34F");
  assert.equal(joinedAddress("https://x.hf.space/?class=OLD&lang=en#top", "ACD34F"),
    "https://x.hf.space/?class=ACD34F&lang=en#top");
});
