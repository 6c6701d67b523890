"""The Gradio-free picture layer between the ViT core (`vit`) and the app (`ui`): safe image
decoding (images), the catalogue of loadable models (catalog), the one forward pass per image
(explain), what each view shows (views) and how pictures are drawn (render)."""
