"""The Gradio-free picture layer between the ViT core (`vit`) and the app (`ui`): safe image
decoding (images), the catalogue of loadable models (catalog), the one forward pass per image
(explain), what each view shows (views), how pictures are drawn (render), and the numbers the
page draws the first screen from itself (page_maps)."""
