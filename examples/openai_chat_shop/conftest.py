from shop_tools import openai_client, shop_agent
from shopkit import Store

from pytest_commerce_evals import BriefCustomer, OpenAIChatAgent, Snapshot


class Backend(Store):
    def load_state(self, state):
        self.cart, self.memory = {c.product_id: c.quantity for c in state.cart}, state.memory

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart, memory=self.memory, data={"orders": self.orders})


def pytest_commerce_evals_make_backend(config, case):
    return Backend()


def pytest_commerce_evals_make_agent(config, case, backend):
    return OpenAIChatAgent(openai_client(), **shop_agent(backend))


def pytest_commerce_evals_make_user(config, case):
    return BriefCustomer()
