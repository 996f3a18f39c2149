"""A Flask app serving requests through its test client, no network (bench/b_python_real.sh):
for SECONDS, each round a GET of an item as JSON (get_item), a POST of JSON (add_item) and
a GET of a page rendered from a Jinja template (list_page), through Werkzeug's WSGI
machinery as a server would run them.

usage: flask_app.py SECONDS"""
import sys
import time

from flask import Flask, jsonify, render_template_string, request

app = Flask(__name__)
ITEMS = {i: {"id": i, "name": "item%d" % i, "price": i * 1.5} for i in range(200)}
PAGE = ("<ul>{% for it in items %}<li>{{ it.name }}: {{ '%.2f'|format(it.price) }}</li>"
        "{% endfor %}</ul>")


@app.route("/items/<int:item_id>")
def get_item(item_id):
    return jsonify(ITEMS[item_id])


@app.route("/items", methods=["POST"])
def add_item():
    body = request.get_json()
    ITEMS[body["id"]] = body
    return jsonify(ok=True), 201


@app.route("/page")
def list_page():
    return render_template_string(PAGE, items=list(ITEMS.values())[:50])


def serve(seconds):
    client = app.test_client()
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        assert client.get("/items/%d" % (rounds % 200)).status_code == 200
        assert client.post("/items", json={"id": rounds % 200, "name": "x", "price": 1.0}).status_code == 201
        assert client.get("/page").status_code == 200
        rounds += 1
    return rounds


if __name__ == "__main__":
    print(serve(float(sys.argv[1])))
