// The page's own drawing, started: Explore's maps (window.attentionMaps), Live's (window.liveMaps) and class
// mode (window.classroom, its gallery window.classGallery and the teacher's Train run window.classRun), which
// ui/explore.py's and ui/live.py's components and events call once `window.pageMaps`, this module's import
// (ui/explore.py, PAGE_MAPS_JS), has resolved. What the server decides for them (the colour tables, Play's step, the
// pictures that follow the style) comes in the page's head as JSON.
import { ExploreMaps } from "./explore.js";
import { LiveMaps } from "./live.js";
import { Classroom } from "./classroom.js";
import { Gallery } from "./gallery.js";
import { ClassRun } from "./classrun.js";

export const CONFIG_ID = "page-maps-config"; // ui/explore.py's PAGE_CONFIG_ID

const config = JSON.parse(document.getElementById(CONFIG_ID).textContent);
window.attentionMaps = new ExploreMaps(config);
window.liveMaps = new LiveMaps(config);
window.classroom = new Classroom(config, window.attentionMaps); // class mode, on Explore's maps
window.classGallery = new Gallery(window.classroom); // its gallery ("Show me yours")
window.classRun = new ClassRun(window.classroom); // the teacher's Train run, on a student's Train tab
