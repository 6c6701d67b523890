"""Glue between the ViT core (`vit`) and the Gradio app: safe image decoding, the model
catalogue, and the one-forward-pass analysis every view of the app reads from."""
