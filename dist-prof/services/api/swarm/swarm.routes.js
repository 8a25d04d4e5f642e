import { AppError } from '../../../shared/errors.js';
import { defineRoute } from '../../../shared/http/route.js';
const notImplemented = async () => {
    throw new AppError('not_implemented');
};
/**
 * The swarm API routes the spec names without shapes. They are registered so that clients get a
 * stable 501 `not_implemented` (not a 404) and the rate buckets of the swarm API apply to them.
 */
export function swarmRoutes() {
    const common = { tags: ['swarm'], auth: { kind: 'none' }, errors: ['not_implemented'], handler: notImplemented };
    return [
        defineRoute({ ...common, operationId: 'swarmAgentRecover', method: 'POST', path: '/agents/recover', summary: 'Agent recovery (swarm API; not implemented: 501)', bucket: 'swarm_register' }),
        defineRoute({ ...common, operationId: 'swarmAgentHeartbeat', method: 'POST', path: '/agents/heartbeat', summary: 'Agent heartbeat (swarm API; not implemented: 501)', bucket: 'swarm_write' }),
        defineRoute({ ...common, operationId: 'swarmKnowledgePost', method: 'POST', path: '/knowledge/post', summary: 'Post a knowledge item (swarm API; not implemented: 501)', bucket: 'swarm_write' }),
    ];
}
//# sourceMappingURL=swarm.routes.js.map