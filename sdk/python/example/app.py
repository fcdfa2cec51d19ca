import os
from flask import Flask
from rlserver import Client
from rlserver.wsgi import RateLimitMiddleware

rl = Client.from_url(os.environ.get("RLSERVER_URL", "redis://127.0.0.1:6379"),
                     timeout=0.05,       # bounds connecting and each call
                     failure="local")    # an in-process limiter while rlserver is away
try:
    rl.check()                           # a wrong password is logged here, at start
except Exception:
    pass
app = Flask(__name__)
# Bursts of 20, then 10/s per client address; keys "rl:default:tokenbucket:<ip>".
app.wsgi_app = RateLimitMiddleware(app.wsgi_app, rl.token_bucket(20, 10, 1000))

@app.get("/")
def hello() -> str:
    return "hello\n"
