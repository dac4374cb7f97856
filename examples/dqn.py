#!/usr/bin/env python3
"""DQN on CartPole in Python PyTorch: the twin of examples/dqn.c.

The same CartPole-v1 (gymnasium's equations in float64, here in plain
Python), the same Q-network and target network, replay buffer, epsilon
schedule and Adam, and the same random draws from one torch.Generator in
the same order, so that from the same seed it prints the same returns as
the C program (see dqn.c's header comment for the whole recipe).
"""
import argparse
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# CartPole-v1 as gymnasium/envs/classic_control/cartpole.py, in its order of operations
GRAVITY, MASSCART, MASSPOLE, LENGTH, FORCE_MAG, TAU, X_THRESHOLD, MAX_STEPS = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02, 2.4, 500
TOTAL_MASS, POLEMASS_LENGTH = MASSPOLE + MASSCART, MASSPOLE * LENGTH
THETA_THRESHOLD = 12 * 2 * math.pi / 360
CAPACITY, BATCH, GAMMA = 50000, 64, 0.99


def cartpole_step(s, action):
    x, x_dot, theta, theta_dot = s
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    costheta, sintheta = math.cos(theta), math.sin(theta)
    temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    s[:] = [x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot, theta_dot + TAU * thetaacc]
    return s[0] < -X_THRESHOLD or s[0] > X_THRESHOLD or s[2] < -THETA_THRESHOLD or s[2] > THETA_THRESHOLD


def cartpole_reset(g):
    return [u * 0.1 - 0.05 for u in torch.rand(4, generator=g, dtype=torch.float64).tolist()]


def qnet():
    return nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))


def update(q, target, opt, buf, size, g):
    obs, act, rew, nxt, notdone = buf
    idx = torch.randint(0, size, (BATCH,), generator=g)
    qa = q(obs[idx]).gather(1, act[idx].unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = rew[idx] + GAMMA * target(nxt[idx]).max(1).values * notdone[idx]
    loss = F.mse_loss(qa, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def dynamics(n, g):
    s, t = cartpole_reset(g), 0
    print("reset", *(f"{v:.17g}" for v in s))
    for _ in range(n):
        a = int(torch.randint(0, 2, (1,), generator=g))
        term = cartpole_step(s, a)
        t += 1
        print("step", a, "", *(f"{v:.17g}" for v in s), int(term), int(not term and t == MAX_STEPS))
        if term or t == MAX_STEPS:
            s, t = cartpole_reset(g), 0
            print("reset", *(f"{v:.17g}" for v in s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--learning-starts", type=int, default=1000)
    ap.add_argument("--eps-steps", type=int, default=10000)
    ap.add_argument("--target-every", type=int, default=500)
    ap.add_argument("--solve", type=int, default=1)
    ap.add_argument("--save", default="")
    ap.add_argument("--dynamics", type=int, default=0)
    a = ap.parse_args()
    g = torch.Generator().manual_seed(a.seed)
    if a.dynamics > 0:
        return dynamics(a.dynamics, g)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    q, target = qnet(), qnet()
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    buf = (torch.zeros(CAPACITY, 4), torch.zeros(CAPACITY, dtype=torch.int64), torch.zeros(CAPACITY),
           torch.zeros(CAPACITY, 4), torch.zeros(CAPACITY))
    size = pos = t = solved_at = 0
    returns, mean100, loss = [], 0.0, 0.0
    print(f"DQN on CartPole-v1, up to {a.episodes} episodes, {torch.get_num_threads()} thread(s), seed {a.seed} [python]",
          flush=True)
    t0 = time.perf_counter()
    for ep in range(1, a.episodes + 1):
        s = cartpole_reset(g)
        obs = torch.tensor(s, dtype=torch.float32)
        ret = done = 0
        while not done:
            eps = 1.0 + (0.05 - 1.0) * (t / a.eps_steps if t < a.eps_steps else 1.0)
            if torch.rand(1, generator=g).item() < eps:
                act = int(torch.randint(0, 2, (1,), generator=g))
            else:
                with torch.no_grad():
                    act = int(q(obs.unsqueeze(0)).argmax())
            term = cartpole_step(s, act)
            ret, t = ret + 1, t + 1
            done = term or ret == MAX_STEPS
            nxt = torch.tensor(s, dtype=torch.float32)
            for b, v in zip(buf, (obs, act, 1.0, nxt, 0.0 if term else 1.0)):
                b[pos] = v
            obs, pos, size = nxt, (pos + 1) % CAPACITY, min(size + 1, CAPACITY)
            if t >= a.learning_starts:
                loss = update(q, target, opt, buf, size, g)
            if t % a.target_every == 0:
                target.load_state_dict(q.state_dict())
        returns.append(ret)
        mean100 = sum(returns[-100:]) / len(returns[-100:])
        print(f"episode {ep} return {ret} mean100 {mean100:.2f} steps {t} loss {loss:.6f}", flush=True)
        if ep >= 100 and mean100 >= 195 and not solved_at:
            solved_at = ep
            print(f"solved at episode {ep} (mean return of the last 100: {mean100:.2f})")
            if a.solve:
                break
    dt = time.perf_counter() - t0
    if a.save:
        torch.save(q.state_dict(), a.save)
        print(f"saved weights to {a.save}")
    print(f"episodes={ep} steps={t} solved_at={solved_at} mean100={mean100:.2f} last_loss={loss:.6f} "
          f"seconds={dt:.1f} steps_per_s={t / dt:.1f}")


if __name__ == "__main__":
    sys.exit(main())
